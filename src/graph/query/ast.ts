/** Where a node starts in the query text: 1-based line and column, 0-based offset. */
export interface Position {
  line: number;
  column: number;
  offset: number;
}

export interface Query {
  statements: Statement[];
}

/** `Type ?label ; clause ; clause .` */
export interface Statement {
  type: string;
  label: Label;
  clauses: Clause[];
  pos: Position;
}

export interface Label {
  name: string;
  pos: Position;
}

export type Clause = KeyClause | AttributeClause | LinkClause;

/** `entity:key <value>` */
export interface KeyClause {
  kind: "key";
  value: Value;
  pos: Position;
}

/** `attribute:<name> <value>` */
export interface AttributeClause {
  kind: "attribute";
  name: string;
  value: Value;
  pos: Position;
}

/** `link:<relation> Type:?label` or `link:<relation> ?label` */
export interface LinkClause {
  kind: "link";
  relation: string;
  target: { type: string | undefined; label: Label };
  pos: Position;
}

export type Value = StringValue | NumberValue | BooleanValue | ParamValue | LabelValue;

/** A string literal; `${param}` inside it makes it a template. */
export interface StringValue {
  kind: "string";
  parts: (string | ParamRef)[];
  pos: Position;
}

export interface NumberValue {
  kind: "number";
  value: number;
  pos: Position;
}

export interface BooleanValue {
  kind: "boolean";
  value: boolean;
  pos: Position;
}

/** `${name}` standing alone as a value. */
export interface ParamValue {
  kind: "param";
  name: string;
  pos: Position;
}

/** `?name` as a value: the id of an entity label, or a value variable joined by equality. */
export interface LabelValue {
  kind: "label";
  name: string;
  pos: Position;
}

export interface ParamRef {
  param: string;
  pos: Position;
}
