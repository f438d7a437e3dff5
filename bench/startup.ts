/** Start-up benchmark (time to /readyz, idle RSS) — filled in by the foundation work. */
export async function run(): Promise<void> {
  console.log("(startup benchmark pending)");
}
