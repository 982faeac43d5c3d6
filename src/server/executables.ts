/** Finding programs to spawn: the executable check and the `PATH` search the server layer shares. */
import { accessSync, constants, statSync } from "node:fs";
import { delimiter, join } from "node:path";

/** Whether `path` is a file the current user may execute. */
export function isExecutable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

/**
 * The first executable `name` in the folders of `searchPath` (a `PATH` value), then in
 * `extraFolders`; null when there is none. Empty `PATH` entries (the current folder, to a shell)
 * are not searched.
 */
export function findOnPath(
  name: string,
  searchPath: string | undefined,
  extraFolders: readonly string[] = [],
): string | null {
  for (const folder of [...(searchPath ?? "").split(delimiter), ...extraFolders]) {
    if (folder === "") continue;
    const candidate = join(folder, name);
    if (isExecutable(candidate)) return candidate;
  }
  return null;
}
