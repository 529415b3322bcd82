package local.engines.camunda7;

import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;

/** Camunda 7 with its REST API at /engine-rest, for the workers' tests. */
@SpringBootApplication
public class EngineApplication {
  public static void main(String[] args) {
    SpringApplication.run(EngineApplication.class, args);
  }
}
