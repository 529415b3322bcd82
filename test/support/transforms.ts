import { expect } from "chai";
import { ProblemError } from "../../src/errors.js";
import type { TransformLimits } from "../../src/transform/protocol.js";
import { compileTransform, type CompiledTransform } from "../../src/transform/transform.js";

/** A query output of two access points, one without `accessPointType`. */
export const ACCESS_POINTS_OUTPUT = {
  ap: [
    { id: "id-1", type: "AccessPoint", key: "k1", externalId: "E1", accessPointType: "GAS" },
    { id: "id-2", type: "AccessPoint", key: "k2", externalId: "E2" },
  ],
};

/** Compiles a transform the test expects to be valid. */
export function compileValid(text: string, limits: TransformLimits): CompiledTransform {
  const { transform, problems } = compileTransform(text, limits);
  expect(problems).to.deep.equal([]);
  return transform!;
}

/** The ProblemError `promise` rejects with; fails the test when it resolves or rejects with anything else. */
export async function problemOf(promise: Promise<unknown>): Promise<ProblemError> {
  try {
    await promise;
  } catch (err) {
    expect(err).to.be.instanceOf(ProblemError);
    return err as ProblemError;
  }
  expect.fail("the evaluation did not fail");
}
