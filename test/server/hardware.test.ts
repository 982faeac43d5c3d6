/**
 * GPU detection: systeminformation's graphics output for NVIDIA and AMD machines (fixtures under
 * test/fixtures/hardware/, see its README), amdgpu's sysfs files, and this GPU-less machine.
 */
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { HardwareDetectionError } from "../../src/core/errors.ts";
import { ollamaTierTokens } from "../../src/server/budget.ts";
import { detectHardware, hardwareFromGraphics, readAmdSysfsVram } from "../../src/server/hardware.ts";
import { gpuPresent } from "./helpers/gpu.ts";

const fixtures = fileURLToPath(new URL("../fixtures/hardware/", import.meta.url));
const graphics = (name: string): unknown => JSON.parse(readFileSync(`${fixtures}${name}.json`, "utf8"));
const amdSysfsRoot = `${fixtures}sysfs-amd-rx7900xtx`;

describe("hardwareFromGraphics", () => {
  it("counts an RTX 4090 by nvidia-smi's memory.total and skips the Intel iGPU", () => {
    const { profile, skipped } = hardwareFromGraphics(graphics("nvidia-rtx4090-with-igpu-linux"), {
      platform: "linux",
    });
    expect(profile).toEqual({
      gpus: [
        {
          vendor: "nvidia",
          name: "NVIDIA GeForce RTX 4090",
          busAddress: "01:00.0",
          vramTotalMb: 24_564,
          source: "nvidia-smi",
        },
      ],
      gpuName: "NVIDIA GeForce RTX 4090",
      vramTotalMb: 24_564,
    });
    expect(skipped).toEqual([
      { name: "AlderLake-S GT1", reason: "vendor 'Intel Corporation' is neither NVIDIA nor AMD" },
    ]);
    // 24 564 MiB is just under 24 GiB: Ollama's smallest tier.
    expect(ollamaTierTokens(profile!.vramTotalMb)).toBe(4096);
  });

  it("sums two RTX 3090s into Ollama's top tier", () => {
    const { profile } = hardwareFromGraphics(graphics("nvidia-dual-rtx3090-linux"), { platform: "linux" });
    expect(profile?.gpus.map((gpu) => gpu.busAddress)).toEqual(["01:00.0", "02:00.0"]);
    expect(profile?.gpuName).toBe("NVIDIA GeForce RTX 3090 + NVIDIA GeForce RTX 3090");
    expect(profile?.vramTotalMb).toBe(49_152);
    expect(ollamaTierTokens(profile!.vramTotalMb)).toBe(262_144);
  });

  it("does not mistake an NVIDIA card's PCI BAR for VRAM when nvidia-smi is missing", () => {
    const { profile, skipped } = hardwareFromGraphics(graphics("nvidia-without-driver-linux"), {
      platform: "linux",
    });
    expect(profile).toBeNull();
    expect(skipped).toEqual([
      {
        name: "AD102 [GeForce RTX 4090]",
        reason: "nvidia-smi did not report its memory (is the NVIDIA driver installed?)",
      },
    ]);
  });

  it("takes an AMD card's VRAM from amdgpu's sysfs figure for its PCI address", async () => {
    const amdSysfs = await readAmdSysfsVram(amdSysfsRoot);
    expect(amdSysfs).toEqual([{ busAddress: "03:00.0", vramTotalMb: 24_576 }]);
    const { profile, skipped } = hardwareFromGraphics(graphics("amd-rx7900xtx-linux"), {
      platform: "linux",
      amdSysfs,
    });
    expect(profile).toEqual({
      gpus: [
        {
          vendor: "amd",
          name: "Navi 31 [Radeon RX 7900 XT/7900 XTX/7900M]",
          busAddress: "03:00.0",
          vramTotalMb: 24_576,
          source: "amdgpu-sysfs",
        },
      ],
      gpuName: "Navi 31 [Radeon RX 7900 XT/7900 XTX/7900M]",
      vramTotalMb: 24_576,
    });
    expect(skipped).toEqual([]);
    expect(ollamaTierTokens(profile!.vramTotalMb)).toBe(32_768);
  });

  it("skips an AMD card on Linux without sysfs figures instead of reading its 256 MiB BAR as VRAM", () => {
    const { profile, skipped } = hardwareFromGraphics(graphics("amd-rx7900xtx-linux"), { platform: "linux" });
    expect(profile).toBeNull();
    expect(skipped[0]?.reason).toBe("no amdgpu sysfs VRAM figure (lspci's size is a PCI BAR, not VRAM)");
  });

  it("counts an amdgpu card that systeminformation did not list", async () => {
    const amdSysfs = await readAmdSysfsVram(amdSysfsRoot);
    const { profile } = hardwareFromGraphics(graphics("none-linux-headless"), {
      platform: "linux",
      amdSysfs,
    });
    expect(profile?.gpus).toEqual([
      {
        vendor: "amd",
        name: "AMD GPU 03:00.0",
        busAddress: "03:00.0",
        vramTotalMb: 24_576,
        source: "amdgpu-sysfs",
      },
    ]);
  });

  it("trusts systeminformation's AMD vram outside Linux, and never counts shared-memory GPUs", () => {
    // Constructed in the shape of systeminformation's Windows controllers (vram from the registry).
    const windows = {
      controllers: [
        {
          vendor: "Advanced Micro Devices, Inc.",
          model: "AMD Radeon RX 7900 XT",
          bus: "PCI",
          vram: 20_464,
          vramDynamic: false,
        },
        {
          vendor: "Advanced Micro Devices, Inc.",
          model: "AMD Radeon(TM) Graphics",
          bus: "PCI",
          vram: 512,
          vramDynamic: true,
        },
      ],
      displays: [],
    };
    const { profile, skipped } = hardwareFromGraphics(windows, { platform: "win32" });
    expect(profile?.gpus).toEqual([
      {
        vendor: "amd",
        name: "AMD Radeon RX 7900 XT",
        busAddress: null,
        vramTotalMb: 20_464,
        source: "systeminformation",
      },
    ]);
    expect(skipped).toEqual([
      { name: "AMD Radeon(TM) Graphics", reason: "integrated GPU sharing system memory" },
    ]);
  });

  it("returns null for a machine without GPUs", () => {
    expect(hardwareFromGraphics(graphics("none-linux-headless"), { platform: "linux" })).toEqual({
      profile: null,
      skipped: [],
    });
  });

  it("throws HardwareDetectionError for output that is not systeminformation's shape", () => {
    expect(() => hardwareFromGraphics({ controllers: "none" })).toThrow(HardwareDetectionError);
    expect(() => hardwareFromGraphics({ controllers: [{ vram: "24 GB" }] })).toThrow(/unexpected shape/);
  });
});

describe("readAmdSysfsVram", () => {
  it("reads nothing from a folder that does not exist", async () => {
    await expect(readAmdSysfsVram(`${fixtures}no-such-folder`)).resolves.toEqual([]);
  });
});

describe("detectHardware", () => {
  it("wraps a failing systeminformation call in HardwareDetectionError", async () => {
    const error = await detectHardware({
      graphics: async () => {
        throw new Error("lspci: command crashed");
      },
    }).catch((failure: unknown) => failure);
    expect(error).toBeInstanceOf(HardwareDetectionError);
    expect((error as Error).message).toBe("systeminformation.graphics() failed: lspci: command crashed");
  });

  it("combines systeminformation and sysfs, and reports what it skipped", async () => {
    const skipped: string[] = [];
    const profile = await detectHardware({
      graphics: async () => graphics("nvidia-rtx4090-with-igpu-linux"),
      drmRoot: amdSysfsRoot,
      platform: "linux",
      onSkipped: (gpu) => skipped.push(gpu.name),
    });
    expect(profile?.gpuName).toBe("NVIDIA GeForce RTX 4090 + AMD GPU 03:00.0");
    expect(profile?.vramTotalMb).toBe(24_564 + 24_576);
    expect(skipped).toEqual(["AlderLake-S GT1"]);
  });

  it.skipIf(gpuPresent)("finds no GPU on this GPU-less machine with the real systeminformation", async () => {
    await expect(detectHardware()).resolves.toBeNull();
  });
});
