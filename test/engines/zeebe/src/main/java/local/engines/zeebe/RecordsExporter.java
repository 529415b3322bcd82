package local.engines.zeebe;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import io.camunda.zeebe.exporter.api.Exporter;
import io.camunda.zeebe.exporter.api.context.Context;
import io.camunda.zeebe.exporter.api.context.Controller;
import io.camunda.zeebe.protocol.record.Record;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Queue;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;

/**
 * An exporter that keeps the broker's records in memory and serves them as JSON over HTTP, since
 * Zeebe has no query API of its own (Operate reads exported records). The tests read incidents,
 * jobs and the path an instance took from it.
 *
 * <p>{@code GET /records?valueType=INCIDENT} answers the records of that value type as a JSON
 * array, oldest first (every record, in log order, when no valueType is given). Configured by environment:
 * {@code ZEEBE_BROKER_EXPORTERS_RECORDS_CLASSNAME=local.engines.zeebe.RecordsExporter},
 * {@code ZEEBE_BROKER_EXPORTERS_RECORDS_JARPATH=<this jar>}, {@code
 * ZEEBE_BROKER_EXPORTERS_RECORDS_ARGS_PORT=<port>} (on 127.0.0.1).
 */
public final class RecordsExporter implements Exporter {
  /** One record: its position in the log and its JSON. */
  private record Exported(long position, String json) {}

  /** The records, per value type, in log order (each kept once: the whole log is merged on demand). */
  private final Map<String, Queue<Exported>> records = new ConcurrentHashMap<>();
  private int port;
  private Controller controller;
  private HttpServer server;

  @Override
  public void configure(Context context) {
    Object configured = context.getConfiguration().getArguments().get("port");
    if (configured == null) throw new IllegalArgumentException("the records exporter needs args.port");
    port = Integer.parseInt(configured.toString());
  }

  @Override
  public void open(Controller controller) {
    this.controller = controller;
    try {
      server = HttpServer.create(new InetSocketAddress("127.0.0.1", port), 0);
    } catch (IOException e) {
      throw new IllegalStateException("the records exporter cannot listen on 127.0.0.1:" + port, e);
    }
    server.createContext("/records", this::answer);
    server.start();
    System.out.println("zeebe records at http://127.0.0.1:" + port + "/records");
  }

  @Override
  public void close() {
    if (server != null) server.stop(0);
    server = null;
  }

  @Override
  public void export(Record<?> record) {
    records.computeIfAbsent(record.getValueType().name(), k -> new ConcurrentLinkedQueue<>()).add(new Exported(record.getPosition(), record.toJson()));
    controller.updateLastExportedRecordPosition(record.getPosition());
  }

  private void answer(HttpExchange exchange) throws IOException {
    String valueType = queryValue(exchange.getRequestURI().getRawQuery(), "valueType");
    List<Exported> answer = new ArrayList<>();
    if (valueType != null) {
      answer.addAll(records.getOrDefault(valueType, new ConcurrentLinkedQueue<>()));
    } else {
      records.values().forEach(answer::addAll);
      answer.sort(Comparator.comparingLong(Exported::position));
    }
    StringBuilder body = new StringBuilder("[");
    for (Exported exported : answer) {
      if (body.length() > 1) body.append(',');
      body.append(exported.json());
    }
    byte[] bytes = body.append(']').toString().getBytes(StandardCharsets.UTF_8);
    exchange.getResponseHeaders().set("content-type", "application/json");
    exchange.sendResponseHeaders(200, bytes.length);
    try (OutputStream out = exchange.getResponseBody()) {
      out.write(bytes);
    }
  }

  private static String queryValue(String rawQuery, String name) {
    if (rawQuery == null) return null;
    for (String pair : rawQuery.split("&")) {
      int eq = pair.indexOf('=');
      if (eq > 0 && pair.substring(0, eq).equals(name)) {
        return URLDecoder.decode(pair.substring(eq + 1), StandardCharsets.UTF_8);
      }
    }
    return null;
  }
}
