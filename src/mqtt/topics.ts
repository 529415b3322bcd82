import { isUuid } from "../input.js";

/** A tenant id as X-TENANT-ID takes it (contract §9): 1 to 128 visible ASCII characters. */
const TENANT_PATTERN = /^[\x21-\x7e]{1,128}$/;

/** The subscription: every item's events of every tenant, or of the one tenant pinned. */
export function eventsFilter(prefix: string, tenant: string | undefined): string {
  return `${prefix}/${tenant ?? "+"}/items/+/events`;
}

/** Where bad messages go, with the reason and the original payload. */
export function deadLetterTopic(prefix: string): string {
  return `${prefix}/dead-letter`;
}

export type TopicTarget = { tenant: string; itemId: string } | { reason: string };

/**
 * The tenant and item a topic names: `{prefix}/{tenant}/items/{itemId}/events`. With a tenant
 * pinned (MQTT_TENANT), a topic of another tenant is refused (the subscription never asks for one).
 */
export function topicTarget(prefix: string, pinned: string | undefined, topic: string): TopicTarget {
  const rule = `topics are ${prefix}/{tenant}/items/{itemId}/events`;
  if (!topic.startsWith(`${prefix}/`)) return { reason: `the topic ${topic} is outside the prefix: ${rule}` };
  const levels = topic.slice(prefix.length + 1).split("/");
  if (levels.length !== 4 || levels[1] !== "items" || levels[3] !== "events") return { reason: `the topic ${topic} does not name an item: ${rule}` };
  const [tenant, , itemId] = levels as [string, string, string, string];
  if (!TENANT_PATTERN.test(tenant)) return { reason: "the topic's tenant must be 1 to 128 visible ASCII characters" };
  if (pinned !== undefined && tenant !== pinned) return { reason: `the topic's tenant is not ${pinned}, the one MQTT_TENANT pins` };
  if (!isUuid(itemId)) return { reason: `the topic's itemId ${itemId} is not the uuid of an Item` };
  return { tenant, itemId: itemId.toLowerCase() };
}
