// A real Skills peer (SEP-2640) for the driver tests: the official TypeScript SDK's server
// (npm @modelcontextprotocol/server 2.4, its skills extension) over stdio, serving the skills
// directory named by argv[2] (tests/servers/skills).
//
// The SDK checks each file against its own catalog before serving it, so a file changed on disk
// never reaches the client. To show the client's own check, SKILLS_TAMPER=<uri> changes that
// file's text on the wire, after the server: SKILLS_TAMPER_MODE=append adds a line (the size
// differs), swap changes one character (same size, another digest).
import { McpServer } from "@modelcontextprotocol/server";
import { serveStdio, StdioServerTransport } from "@modelcontextprotocol/server/stdio";
import { loadSkills } from "@modelcontextprotocol/server/ext/skills/node";

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

const skills = await loadSkills(process.argv[2]);
const factory = () => {
  const mcp = new McpServer({ name: "skills-peer", version: "1.0.0" });
  skills.attach(mcp);
  return mcp;
};
serveStdio(factory, tamper ? { transport: new TamperingTransport() } : {});
