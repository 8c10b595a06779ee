// A real Skills peer (SEP-2640) for the driver tests: the official TypeScript SDK's server
// (npm @modelcontextprotocol/server 2.4, its skills extension) over stdio, serving the skills
// directory named by argv[2] (tests/servers/skills).
//
// The SDK checks each file against its own catalog before serving it, so a file changed on disk
// never reaches the client. To show the client's own check, SKILLS_TAMPER=<uri> changes that
// file's text on the wire, after the server: SKILLS_TAMPER_MODE=append adds a line (the size
// differs), swap changes one character (same size, another digest).
//
// SKILLS_PAGE_SIZE=<n> serves skills/list and resources/directory/read in pages of n entries.
// SKILLS_NO_DIRECTORY_READ=1 serves the same skills through a source of its own that has no
// directory reads, so the extension's settings are {} (no directoryRead) and the method has no
// handler. SKILLS_DYNAMIC=1 does too, and lists each skill's resources as "dynamic" (no
// manifest; its files are still served).
import { McpServer } from "@modelcontextprotocol/server";
import { serveStdio, StdioServerTransport } from "@modelcontextprotocol/server/stdio";
import { SkillsExtension } from "@modelcontextprotocol/server/ext/skills";
import { loadSkills, nodeSkillFiles } from "@modelcontextprotocol/server/ext/skills/node";

const tamper = process.env.SKILLS_TAMPER;
const mode = process.env.SKILLS_TAMPER_MODE ?? "append";

class TamperingTransport extends StdioServerTransport {
  async send(message, options) {
    for (const item of message?.result?.contents ?? []) {
      if (item.uri === tamper && typeof item.text === "string") {
        item.text = mode === "swap" ? item.text.replace("PDF", "FDP") : item.text + "tampered\n";
      }
    }
    return super.send(message, options);
  }
}

const pageSize = Number(process.env.SKILLS_PAGE_SIZE ?? 100);
const catalog = await loadSkills(process.argv[2], { pageSize });

function withoutDirectoryRead(dynamic) {
  const files = nodeSkillFiles(process.argv[2]);
  const listed = (uri) => catalog.entries.some((s) => s.resources.some((r) => r.uri === uri));
  const entries = catalog.entries.map((s) => (dynamic ? { ...s, resources: "dynamic" } : s));
  return new SkillsExtension({
    source: {
      list: async () => ({ skills: entries }),
      get: async (uri) => entries.find((s) => s.uri === uri),
      read: async (uri) =>
        listed(uri)
          ? { text: new TextDecoder().decode(await files.read(uri.slice("skill://".length))) }
          : undefined,
    },
  });
}

const dynamic = Boolean(process.env.SKILLS_DYNAMIC);
const skills =
  process.env.SKILLS_NO_DIRECTORY_READ || dynamic ? withoutDirectoryRead(dynamic) : catalog;
const factory = () => {
  const mcp = new McpServer({ name: "skills-peer", version: "1.0.0" });
  skills.attach(mcp);
  return mcp;
};
serveStdio(factory, tamper ? { transport: new TamperingTransport() } : {});
