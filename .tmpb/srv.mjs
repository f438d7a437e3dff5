import http from "node:http";
const s = http.createServer((req, res) => { const c = []; req.on("data", (d) => c.push(d)); req.on("end", () => { res.end('{"ok":true}'); }); });
s.listen(0, "127.0.0.1", () => console.log(s.address().port));
