// The parts of camunda-external-task-client-js (which ships no types) this worker uses.
declare module "camunda-external-task-client-js" {
  export interface Task {
    id: string;
    topicName: string;
    tenantId?: string | null;
    retries?: number | null;
    processInstanceId: string;
    /** The process's BPMN id (the engine's task JSON carries it; the client passes every field through). */
    processDefinitionKey?: string | null;
    variables: { getAll(): Record<string, unknown>; get(name: string): unknown };
  }
  export interface FailureOptions {
    errorMessage: string;
    errorDetails?: string;
    retries: number;
    retryTimeout: number;
  }
  export interface TaskService {
    complete(task: Task, processVariables?: Variables, localVariables?: Variables): Promise<void>;
    handleBpmnError(task: Task, errorCode: string, errorMessage?: string, variables?: Variables): Promise<void>;
    handleFailure(task: Task, options: FailureOptions): Promise<void>;
    extendLock(task: Task, newDuration: number): Promise<void>;
  }
  export class Variables {
    set(name: string, value: unknown): this;
    setTyped(name: string, typed: { type: string; value: unknown; valueInfo?: object }): this;
    /** What complete() sends: the variables set, serialised. */
    getDirtyVariables(): Record<string, { type: string; value: unknown; valueInfo?: object }>;
  }
  /** The `got` options of one request, as an interceptor receives and returns them. */
  export interface RequestConfig {
    headers?: Record<string, string | string[] | undefined>;
    hooks?: { beforeRequest?: unknown[]; afterResponse?: unknown[] };
    [option: string]: unknown;
  }
  /** Called before each request with its options; answers the options to send (docs/Client.md, "About interceptors"). */
  export type Interceptor = (config: RequestConfig) => RequestConfig;
  /** Adds `Authorization: Basic …` to every request (docs/BasicAuthInterceptor.md); its constructor answers the interceptor. */
  export const BasicAuthInterceptor: new (options: { username: string; password: string }) => Interceptor;
  export interface ClientOptions {
    baseUrl: string;
    workerId?: string;
    maxTasks?: number;
    maxParallelExecutions?: number;
    lockDuration?: number;
    asyncResponseTimeout?: number;
    interval?: number;
    autoPoll?: boolean;
    interceptors?: Interceptor | Interceptor[];
    use?: unknown;
  }
  export class Client {
    constructor(options: ClientOptions);
    subscribe(topic: string, options: { lockDuration?: number; tenantIdIn?: string[] }, handler: (args: { task: Task; taskService: TaskService }) => Promise<void>): unknown;
    on(event: string, listener: (...args: unknown[]) => void): this;
    start(): void;
    stop(): void;
  }
}
