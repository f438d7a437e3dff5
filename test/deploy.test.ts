import { existsSync, readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";

// No Docker engine runs here: check what can be checked — the files parse and every path they use exists.
describe("deployment files", () => {
  it("docker-compose.yml parses and mounts data and config", () => {
    const compose = parse(readFileSync("docker-compose.yml", "utf8"));
    const service = compose.services.magpie;
    expect(service.build).toBe(".");
    expect(service.volumes).toEqual(expect.arrayContaining(["./data:/app/data", "./config:/app/config:ro"]));
    expect(service.ports).toEqual(["127.0.0.1:8787:8787"]);
    // bubblewrap needs user namespaces and its own /proc in the container.
    expect(service.security_opt).toEqual(
      expect.arrayContaining(["seccomp=unconfined", "apparmor=unconfined", "systempaths=unconfined"]),
    );
  });

  it("docker-compose.pi.yml passes the hardware devices, sysfs GPIO and the host's group ids through", () => {
    const service = parse(readFileSync("docker-compose.pi.yml", "utf8")).services.magpie;
    expect(service.devices).toEqual(
      expect.arrayContaining(["/dev/i2c-1:/dev/i2c-1", "/dev/spidev0.0:/dev/spidev0.0"]),
    );
    expect(service.volumes).toContain("/sys/class/gpio:/sys/class/gpio");
    // Group names don't exist in the image: numeric ids from the host, and a clear error when one is unset.
    for (const name of ["GPIO_GID", "I2C_GID", "SPI_GID", "DIALOUT_GID"]) {
      expect(service.group_add.some((entry: string) => entry.startsWith(`\${${name}:?`))).toBe(true);
    }
    const example = readFileSync(".env.example", "utf8");
    for (const name of ["GPIO_GID", "I2C_GID", "SPI_GID", "DIALOUT_GID"])
      expect(example).toContain(`${name}=`);
  });

  it("the image installs bubblewrap and runs the production bundle", () => {
    const dockerfile = readFileSync("Dockerfile", "utf8");
    expect(dockerfile).toMatch(/apt-get install[^\n]*bubblewrap/);
    expect(dockerfile).toContain('CMD ["node", "dist/bundle/main.js", "start"]');
  });

  it("the image's health check probes liveness (/healthz), with a timeout so a wedged process counts as unhealthy", () => {
    const healthcheck = readFileSync("Dockerfile", "utf8")
      .split("\n")
      .filter((line) => line.startsWith("HEALTHCHECK "));
    expect(healthcheck).toHaveLength(1);
    expect(healthcheck[0]).toContain("http://127.0.0.1:8787/healthz");
    expect(healthcheck[0]).not.toContain("/readyz");
    expect(healthcheck[0]).toMatch(/--timeout=\d+s/);
    expect(healthcheck[0]).toMatch(/--retries=\d+/);
  });

  it("every COPY source in the Dockerfile exists", () => {
    const sources = readFileSync("Dockerfile", "utf8")
      .split("\n")
      .filter((line) => line.startsWith("COPY ") && !line.includes("--from="))
      .flatMap((line) => line.slice(5).trim().split(/\s+/).slice(0, -1));
    expect(sources.length).toBeGreaterThan(4);
    for (const source of sources) expect(existsSync(source), source).toBe(true);
  });
});
