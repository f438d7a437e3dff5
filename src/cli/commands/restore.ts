import type { CliCommand } from "../cli-env.js";

/** `magpie restore`: being built (issue 28); until then it says so and changes nothing. */
export const run: CliCommand = async (_argv, env) => {
  env.stderr.write("magpie restore: not supported yet.\n");
  return 1;
};
