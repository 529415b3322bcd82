import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** A self-signed certificate for localhost and 127.0.0.1 (openssl), as PEM files in a fresh directory. */
export function selfSignedCertificate(): { keyPath: string; certPath: string; key: Buffer; cert: Buffer } {
  const dir = mkdtempSync(join(tmpdir(), "tls-"));
  const keyPath = join(dir, "key.pem");
  const certPath = join(dir, "cert.pem");
  execFileSync("openssl", [
    "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=localhost",
    "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1",
    "-keyout", keyPath, "-out", certPath,
  ], { stdio: "ignore" });
  return { keyPath, certPath, key: readFileSync(keyPath), cert: readFileSync(certPath) };
}
