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
 * array, oldest first (every record when no valueType is given). Configured by environment:
 * {@code ZEEBE_BROKER_EXPORTERS_RECORDS_CLASSNAME=local.engines.zeebe.RecordsExporter},
 * {@code ZEEBE_BROKER_EXPORTERS_RECORDS_JARPATH=<this jar>}, {@code
 * ZEEBE_BROKER_EXPORTERS_RECORDS_ARGS_PORT=<port>} (on 127.0.0.1).
 */
public final class RecordsExporter implements Exporter {
  /** Records as JSON, per value type, in log order; "" holds them all. */
  private final Map<String, Queue<String>> records = new ConcurrentHashMap<>();
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
    String json = record.toJson();
    records.computeIfAbsent(record.getValueType().name(), k -> new ConcurrentLinkedQueue<>()).add(json);
    records.computeIfAbsent("", k -> new ConcurrentLinkedQueue<>()).add(json);
    controller.updateLastExportedRecordPosition(record.getPosition());
  }

  private void answer(HttpExchange exchange) throws IOException {
    String valueType = queryValue(exchange.getRequestURI().getRawQuery(), "valueType");
    StringBuilder body = new StringBuilder("[");
    for (String json : records.getOrDefault(valueType == null ? "" : valueType, new ConcurrentLinkedQueue<>())) {
      if (body.length() > 1) body.append(',');
      body.append(json);
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
