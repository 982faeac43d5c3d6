/**
 * `--permissions <policy>`: a preset's name (`PERMISSION_PRESETS`, e.g. `coding-safe`) or the path
 * of a JSON file checked against `permissionPolicySchema`; an error names what to fix.
 */
import { readFileSync } from "node:fs";
import { ForgeError } from "../core/errors.ts";
import { type PermissionPolicy, permissionPolicySchema } from "../guardrails/permission-policy.ts";
import { PERMISSION_PRESETS } from "../proxy/permission-presets.ts";

/** `--permissions` names no preset and no readable, valid policy file. */
export class PermissionPolicyError extends ForgeError {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
  }
}

/** The policy `--permissions <spec>` names: a preset, else a JSON file. Throws `PermissionPolicyError`. */
export function loadPermissions(spec: string): PermissionPolicy {
  const preset = PERMISSION_PRESETS[spec];
  if (preset !== undefined) return preset;
  const presets = Object.keys(PERMISSION_PRESETS).join(", ");
  let text: string;
  try {
    text = readFileSync(spec, "utf8");
  } catch (error) {
    throw new PermissionPolicyError(
      `--permissions ${spec}: not a preset (${presets}) and not a readable file; give a preset's name or the path of a JSON policy file`,
      { cause: error },
    );
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    throw new PermissionPolicyError(`--permissions ${spec}: not JSON (${(error as Error).message})`, {
      cause: error,
    });
  }
  const parsed = permissionPolicySchema.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const where = issue && issue.path.length > 0 ? issue.path.join(".") : "(policy)";
    throw new PermissionPolicyError(
      `--permissions ${spec}: ${where}: ${issue?.message ?? "invalid policy"}; see docs/proxy.md ("Permission policy")`,
    );
  }
  return parsed.data;
}
