/** A query parameter an API Definition accepts (spec §2.1 `data.queryParameters`). */
export interface QueryParameterSpec {
  name: string;
  type?: string;
}

/** A named timeline (spec §2.1 `data.timelineParameters`, contract §3.3). */
export interface TimelineParameterSpec {
  name: string;
  eventDateRange?: Record<string, unknown>;
  queryOptions?: Record<string, unknown>;
}

export interface ApiDefinitionData {
  queryParameters?: QueryParameterSpec[];
  timelineParameters?: TimelineParameterSpec[];
  [key: string]: unknown;
}

/** What an administrator sends to create or replace a definition. */
export interface ApiDefinitionInput {
  name?: string;
  externalId: string;
  version?: string;
  active?: boolean;
  data?: ApiDefinitionData;
  query: string;
  /** Empty or absent: the query output is the answer. */
  transform?: string;
}

/** A stored definition as every answer shows it. */
export interface ApiDefinition {
  id: string;
  name: string | null;
  externalId: string;
  version: string | null;
  active: boolean;
  data: ApiDefinitionData;
  query: string;
  transform: string;
  createdAt: string;
  updatedAt: string;
}

/** The two parameters taken from the request rather than the body (spec §2.1 headerParameters). */
export const HEADER_PARAMETERS = ["userId", "tenantId"] as const;

export function isHeaderParameter(name: string): boolean {
  return (HEADER_PARAMETERS as readonly string[]).includes(name);
}

/** Whether a transform is "left empty (no content at all)". */
export function isEmptyTransform(transform: string | null | undefined): boolean {
  return transform == null || transform.trim() === "";
}
