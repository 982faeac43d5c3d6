/**
 * Named permission policies for `forge proxy --permissions <name>`. `coding-safe` denies what a
 * coding agent should never run unasked, in the tool shapes the agents `forge launch` starts
 * actually send: Claude Code (`Bash` `command`; `Write`/`Edit`/`MultiEdit` `file_path`,
 * `NotebookEdit` `notebook_path`), Codex (`shell` `command` arrays, `exec_command` `cmd`),
 * opencode (`bash` `command`; `write`/`edit` `filePath`), Qwen Code (`run_shell_command`
 * `command`; `write_file`/`replace` `file_path`) and pi (`bash` `command`; `write`/`edit` `path`).
 */
import { type PermissionPolicy, permissionPolicySchema } from "../guardrails/permission-policy.ts";

/** The shell tools of the coding agents, and the keys that carry their command. */
const SHELL_TOOLS = ["Bash", "bash", "shell", "exec_command", "local_shell", "run_shell_command"];
const COMMAND_ARGS = ["command", "cmd"];
/** The file-writing tools of the coding agents, and the keys that carry their path. */
const WRITE_TOOLS = [
  "Write",
  "Edit",
  "MultiEdit",
  "NotebookEdit",
  "write",
  "edit",
  "multiedit",
  "patch",
  "write_file",
  "replace",
];
const PATH_ARGS = ["file_path", "filePath", "notebook_path", "path"];

/** System folders a recursive `rm` must never target. */
const SYSTEM_DIRS = "bin|boot|dev|etc|home|lib|lib64|opt|proc|root|sbin|srv|sys|usr|var";

/**
 * `coding-safe`: deny recursive `rm` of `/`, `/*`, a system folder, `~`, `$HOME` or `..`; a forced
 * `git push` (`--force`, `--force-with-lease`, `-f`, a `+ref`); a download piped into a shell or
 * interpreter (`curl … | sh`); and file writes outside the workspace. Everything else is allowed.
 */
export const CODING_SAFE_POLICY: PermissionPolicy = permissionPolicySchema.parse({
  default: "allow",
  deny: [
    {
      tools: SHELL_TOOLS,
      args: COMMAND_ARGS,
      match: {
        regex: `\\brm\\s+(?:-\\S+\\s+)*?(?:-[a-zA-Z]*[rR][a-zA-Z]*|--recursive)\\s+(?:[^\\s;|&]+\\s+)*?(?:--\\s+)?["']?(?:/\\*?|~/?|\\$HOME/?|\\.\\./?|/(?:${SYSTEM_DIRS})/?)["']?(?=$|[\\s;|&)])`,
      },
      reason: "a recursive rm of the root, a system folder, the home folder or a parent folder",
    },
    {
      tools: SHELL_TOOLS,
      args: COMMAND_ARGS,
      match: {
        regex:
          "\\bgit\\s+(?:[^;&|\\n]*\\s)?push\\b[^;&|\\n]*\\s(?:--force\\b|-[a-zA-Z]*f[a-zA-Z]*\\b|\\+\\S)",
      },
      reason: "a forced git push rewrites the remote's history",
    },
    {
      tools: SHELL_TOOLS,
      args: COMMAND_ARGS,
      match: {
        regex:
          "\\b(?:curl|wget)\\b[^|;&\\n]*\\|\\s*(?:sudo\\s+)?(?:(?:ba|z|da|k)?sh|python3?|node|perl|ruby)\\b",
      },
      reason: "a downloaded script piped into a shell runs unseen code",
    },
    {
      tools: WRITE_TOOLS,
      args: PATH_ARGS,
      match: { outsideWorkspace: true },
      reason: "the file is outside the workspace",
    },
  ],
});

/** The named policies `--permissions` accepts besides a file. */
export const PERMISSION_PRESETS: Readonly<Record<string, PermissionPolicy>> = Object.freeze({
  "coding-safe": CODING_SAFE_POLICY,
});
