package local.engines.zeebe;

import com.sun.net.httpserver.HttpServer;
import io.camunda.zeebe.process.test.api.ZeebeTestEngine;
import io.camunda.zeebe.process.test.engine.EngineFactory;
import io.camunda.zeebe.protocol.record.Record;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;

/**
 * Starts the in-memory Zeebe engine with its gRPC gateway on the given port, until stopped.
 *
 * <p>Zeebe has no query API of its own (Operate reads exported records); this engine's records are
 * served as JSON on a second port instead, so tests can read incidents and the path an instance
 * took: {@code GET /records?valueType=INCIDENT} answers the records of that value type as a JSON
 * array, oldest first (every record when no valueType is given). {@code POST /clock?addMillis=N}
 * moves the engine's clock forward (zeebe-process-test's increaseTime): due timers and job
 * back-offs fire.
 *
 * <p>Usage: {@code java -jar target/zeebe-engine.jar [gatewayPort] [recordsPort]} (26500, 26501).
 */
public final class EngineMain {
  public static void main(String[] args) throws InterruptedException, IOException {
    int port = args.length > 0 ? Integer.parseInt(args[0]) : 26500;
    int recordsPort = args.length > 1 ? Integer.parseInt(args[1]) : port + 1;
    ZeebeTestEngine engine = EngineFactory.create(port);
    engine.start();

    HttpServer records = HttpServer.create(new InetSocketAddress("127.0.0.1", recordsPort), 0);
    records.createContext("/records", exchange -> {
      String valueType = queryValue(exchange.getRequestURI().getRawQuery(), "valueType");
      StringBuilder body = new StringBuilder("[");
      for (Record<?> record : engine.getRecordStreamSource().getRecords()) {
        if (valueType != null && !record.getValueType().name().equals(valueType)) continue;
        if (body.length() > 1) body.append(',');
        body.append(record.toJson());
      }
      byte[] bytes = body.append(']').toString().getBytes(StandardCharsets.UTF_8);
      exchange.getResponseHeaders().set("content-type", "application/json");
      exchange.sendResponseHeaders(200, bytes.length);
      try (OutputStream out = exchange.getResponseBody()) {
        out.write(bytes);
      }
    });
    records.createContext("/clock", exchange -> {
      String addMillis = queryValue(exchange.getRequestURI().getRawQuery(), "addMillis");
      int status = 400;
      if ("POST".equals(exchange.getRequestMethod()) && addMillis != null && addMillis.matches("\\d{1,9}")) {
        engine.increaseTime(Duration.ofMillis(Long.parseLong(addMillis)));
        status = 204;
      }
      exchange.sendResponseHeaders(status, -1);
      exchange.close();
    });
    records.start();

    System.out.println("zeebe records at http://127.0.0.1:" + recordsPort + "/records");
    System.out.println("zeebe engine ready at " + engine.getGatewayAddress());
    CountDownLatch stopped = new CountDownLatch(1);
    Runtime.getRuntime().addShutdownHook(new Thread(() -> {
      records.stop(0);
      engine.stop();
      stopped.countDown();
    }));
    stopped.await();
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
