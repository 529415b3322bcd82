import { Counter, Gauge, type Registry } from "prom-client";

/** What the subscriber's state reads as at a scrape. */
export interface MqttState {
  connected: boolean;
  /** Messages received and not yet acknowledged. */
  unacked: number;
  /** Age in seconds of the oldest of them; 0 when none. */
  lagSeconds: number;
}

/** The MQTT subscriber's Prometheus metrics, in the service's registry. */
export class MqttMetrics {
  readonly received: Counter;
  readonly stored: Counter;
  readonly streamed: Counter;
  readonly deadLettered: Counter;
  readonly batchFailures: Counter;
  readonly reconnects: Counter;

  constructor(registry: Registry, state: () => MqttState) {
    const registers = [registry];
    this.received = new Counter({ name: "mqtt_messages_received_total", help: "MQTT messages received (a redelivery counts again)", registers });
    this.stored = new Counter({ name: "mqtt_events_stored_total", help: "Events of MQTT messages stored (a redelivered event is written again, unchanged)", registers });
    this.streamed = new Counter({ name: "mqtt_events_streamed_total", help: "Events of MQTT messages for STREAM items, pushed to subscribers and not stored", registers });
    this.deadLettered = new Counter({ name: "mqtt_messages_dead_lettered_total", help: "MQTT messages refused and published to the dead-letter topic", registers });
    this.batchFailures = new Counter({ name: "mqtt_batch_failures_total", help: "Batches whose write failed (database unavailable), written again after a pause", registers });
    this.reconnects = new Counter({ name: "mqtt_reconnects_total", help: "Attempts to connect to the broker again after a lost connection", registers });
    new Gauge({ name: "mqtt_connected", help: "1 while connected to the broker", registers, collect() { this.set(state().connected ? 1 : 0); } });
    new Gauge({ name: "mqtt_messages_unacked", help: "MQTT messages received and not yet acknowledged (bounded by MQTT_MAX_IN_FLIGHT)", registers, collect() { this.set(state().unacked); } });
    new Gauge({ name: "mqtt_lag_seconds", help: "Age of the oldest MQTT message received and not yet acknowledged", registers, collect() { this.set(state().lagSeconds); } });
  }
}
