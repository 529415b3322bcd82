package local.engines.zeebe;

import io.camunda.zeebe.process.test.api.ZeebeTestEngine;
import io.camunda.zeebe.process.test.engine.EngineFactory;
import java.util.concurrent.CountDownLatch;

/** Starts the in-memory Zeebe engine with its gRPC gateway on the given port, until stopped. */
public final class EngineMain {
  public static void main(String[] args) throws InterruptedException {
    int port = args.length > 0 ? Integer.parseInt(args[0]) : 26500;
    ZeebeTestEngine engine = EngineFactory.create(port);
    engine.start();
    System.out.println("zeebe engine ready at " + engine.getGatewayAddress());
    CountDownLatch stopped = new CountDownLatch(1);
    Runtime.getRuntime().addShutdownHook(new Thread(() -> {
      engine.stop();
      stopped.countDown();
    }));
    stopped.await();
  }
}
