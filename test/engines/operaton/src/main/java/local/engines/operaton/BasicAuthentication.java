package local.engines.operaton;

import org.operaton.bpm.engine.IdentityService;
import org.operaton.bpm.engine.ProcessEngine;
import org.operaton.bpm.engine.identity.User;
import org.operaton.bpm.engine.impl.cfg.AbstractProcessEnginePlugin;
import org.operaton.bpm.engine.impl.cfg.ProcessEnginePlugin;
import org.operaton.bpm.engine.rest.security.auth.ProcessEngineAuthenticationFilter;
import org.operaton.bpm.engine.rest.security.auth.impl.HttpBasicAuthenticationProvider;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.web.servlet.FilterRegistrationBean;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * HTTP basic authentication on the REST API, on when engine.basic-auth.user is set
 * (ENGINE_BASIC_AUTH_USER, with ENGINE_BASIC_AUTH_PASSWORD): the engine's own authentication filter
 * checks each request against its identity service, where that user is created at start.
 */
@Configuration
@ConditionalOnProperty("engine.basic-auth.user")
public class BasicAuthentication {
  @Bean
  FilterRegistrationBean<ProcessEngineAuthenticationFilter> restAuthentication() {
    FilterRegistrationBean<ProcessEngineAuthenticationFilter> registration = new FilterRegistrationBean<>(new ProcessEngineAuthenticationFilter());
    registration.addInitParameter("authentication-provider", HttpBasicAuthenticationProvider.class.getName());
    registration.addInitParameter("rest-url-pattern-prefix", "/engine-rest");
    registration.addUrlPatterns("/engine-rest/*");
    return registration;
  }

  @Bean
  ProcessEnginePlugin restUser(@Value("${engine.basic-auth.user}") String id, @Value("${engine.basic-auth.password:}") String password) {
    if (id.isBlank() || password.isBlank()) throw new IllegalStateException("engine.basic-auth.user and engine.basic-auth.password must both be set");
    return new AbstractProcessEnginePlugin() {
      @Override
      public void postProcessEngineBuild(ProcessEngine engine) {
        IdentityService identity = engine.getIdentityService();
        if (identity.createUserQuery().userId(id).count() > 0) return;
        User user = identity.newUser(id);
        user.setPassword(password);
        identity.saveUser(user);
      }
    };
  }
}
