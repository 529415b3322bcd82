package local.engines.operaton;

import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;

/** Operaton (Camunda 7 API) with its REST API at /engine-rest, for the workers' tests. */
@SpringBootApplication
public class EngineApplication {
  public static void main(String[] args) {
    SpringApplication.run(EngineApplication.class, args);
  }
}
