/** The REST API as the console uses it: every call carries the session's token and tenant. */

export interface Session {
  token: string;
  tenant: string;
}

/** A problem+json answer (contract §7). */
export interface ProblemDetail {
  path?: string;
  message?: string;
  line?: number;
  column?: number;
  limit?: string;
  [key: string]: unknown;
}

export class ApiProblem extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    readonly detail: string,
    readonly errors: ProblemDetail[],
  ) {
    super(`${status} ${code}: ${detail}`);
  }
}

const SESSION_KEY = "console.session";

/** Kept for the tab's session only (sessionStorage): closing the tab forgets the token. */
export function loadSession(): Session | undefined {
  const text = sessionStorage.getItem(SESSION_KEY);
  if (text === null) return undefined;
  try {
    const value = JSON.parse(text) as Partial<Session>;
    return typeof value.token === "string" && typeof value.tenant === "string" ? { token: value.token, tenant: value.tenant } : undefined;
  } catch {
    return undefined;
  }
}

export function saveSession(session: Session | undefined): void {
  if (session === undefined) sessionStorage.removeItem(SESSION_KEY);
  else sessionStorage.setItem(SESSION_KEY, JSON.stringify(session));
}

/** Calls the API; a problem answer is thrown as an {@link ApiProblem}. */
export async function call<T>(session: Session, method: string, path: string, body?: unknown): Promise<T> {
  const headers: Record<string, string> = { authorization: `Bearer ${session.token}`, "x-tenant-id": session.tenant };
  if (body !== undefined) headers["content-type"] = "application/json";
  const response = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  if (response.status === 204) return undefined as T;
  const text = await response.text();
  const value: unknown = text === "" ? null : JSON.parse(text);
  if (!response.ok) {
    const problem = (value ?? {}) as { code?: string; detail?: string; errors?: ProblemDetail[] };
    throw new ApiProblem(response.status, problem.code ?? "ERROR", problem.detail ?? response.statusText, problem.errors ?? []);
  }
  return value as T;
}
