/** The provider's role names mapped to the service's: each provider role to the roles it grants. */
export type RoleMap = ReadonlyMap<string, readonly string[]>;

const ROLE = /^[^\s,=]+$/;

/**
 * Reads `realm-admin=admin,ops=admin`: comma-separated `provider-role=role` pairs, names without
 * blanks, commas or `=`. A provider role named twice grants both. Undefined when it is not of this form.
 */
export function parseRoleMap(text: string): RoleMap | undefined {
  const map = new Map<string, string[]>();
  for (const pair of text.split(",")) {
    const [from, to, ...rest] = pair.split("=").map((s) => s.trim());
    if (from === undefined || to === undefined || rest.length > 0 || !ROLE.test(from) || !ROLE.test(to)) return undefined;
    const roles = map.get(from) ?? [];
    if (!roles.includes(to)) roles.push(to);
    map.set(from, roles);
  }
  return map;
}
