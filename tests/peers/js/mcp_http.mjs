// Serves MCP servers on the official TypeScript SDK over stateful streamable HTTP on a free loopback
// port, for the test peers: `build()` makes a server for each session. Prints "MCP <url>" on the
// first line of stdout (what tests/peers/mcp_peers.py reads).
import { randomUUID } from "node:crypto";
import http from "node:http";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";

export function serveHttp(build) {
  const sessions = new Map();
  const httpServer = http.createServer(async (req, res) => {
    if (!req.url.startsWith("/mcp")) {
      res.writeHead(404).end();
      return;
    }
    const id = req.headers["mcp-session-id"];
    let transport = id ? sessions.get(id) : undefined;
    if (!transport) {
      if (id) {
        res.writeHead(404, { "content-type": "application/json" }).end(
          JSON.stringify({ jsonrpc: "2.0", error: { code: -32001, message: "Session not found" }, id: null }),
        );
        return;
      }
      transport = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (sid) => sessions.set(sid, transport),
        enableDnsRebindingProtection: true,
        allowedHosts: [`127.0.0.1:${httpServer.address().port}`],
      });
      transport.onclose = () => transport.sessionId && sessions.delete(transport.sessionId);
      await build().connect(transport);
    }
    await transport.handleRequest(req, res);
  });
  httpServer.listen(0, "127.0.0.1", () => {
    console.log(`MCP http://127.0.0.1:${httpServer.address().port}/mcp`);
  });
}
