/** The proxy chosen for the API server, checked against the cases of Go's own httpproxy tests. */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { chooseProxy, proxyForLog, proxyFromEnvironment } from "./proxy.js";

type Env = Record<string, string | undefined>;

const proxyOf = (server: string, env: Env): string | undefined => proxyFromEnvironment(new URL(server), env)?.url.href;

describe("proxyFromEnvironment (Go's http.ProxyFromEnvironment)", () => {
  test("HTTPS_PROXY for https, HTTP_PROXY for http; a value without a scheme is an http proxy", () => {
    const env = { HTTP_PROXY: "http.proxy.tld", HTTPS_PROXY: "secure.proxy.tld" };
    assert.equal(proxyOf("http://insecure.tld/", env), "http://http.proxy.tld/");
    assert.equal(proxyOf("https://secure.tld/", env), "http://secure.proxy.tld/");
    assert.equal(
      proxyOf("https://secure.tld/", { HTTPS_PROXY: "https://secure.proxy.tld" }),
      "https://secure.proxy.tld/",
    );
    assert.equal(proxyOf("https://secure.tld/", { HTTP_PROXY: "http.proxy.tld" }), undefined, "not HTTP_PROXY");
    assert.equal(proxyOf("https://k.tld", { HTTPS_PROXY: "127.0.0.1:8080" }), "http://127.0.0.1:8080/");
    assert.equal(proxyOf("https://k.tld", { HTTPS_PROXY: "localhost" }), "http://localhost/");
    assert.equal(proxyOf("https://k.tld", { HTTPS_PROXY: "socks5://127.0.0.1" }), "socks5://127.0.0.1");
    assert.equal(proxyOf("https://k.tld", { ALL_PROXY: "http://all" }), undefined, "Go reads no ALL_PROXY");
  });

  test("upper case before lower case, an empty value is unset, and where it came from", () => {
    const both = { HTTPS_PROXY: "http://upper", https_proxy: "http://lower" };
    assert.deepEqual(proxyFromEnvironment(new URL("https://k.tld"), both)?.from, "HTTPS_PROXY");
    assert.equal(proxyOf("https://k.tld", { HTTPS_PROXY: "", https_proxy: "http://lower" }), "http://lower/");
    assert.equal(proxyOf("https://k.tld", { NO_PROXY: "", no_proxy: "k.tld", HTTPS_PROXY: "p" }), undefined);
  });

  test("HTTP_PROXY is refused in a CGI process; HTTPS_PROXY is still used", () => {
    assert.throws(() => proxyOf("http://k.tld", { HTTP_PROXY: "p", REQUEST_METHOD: "GET" }), /CGI/);
    assert.equal(proxyOf("https://k.tld", { HTTPS_PROXY: "p", REQUEST_METHOD: "GET" }), "http://p/");
  });

  // Go's TestUseProxy, for a server on port 80.
  const noProxy =
    "foobar.com, .barbaz.net, *.wildcard.io, 192.168.1.1, 192.168.1.2:81, 192.168.1.3:80, 10.0.0.0/30, " +
    "2001:db8::52:0:1, [2001:db8::52:0:2]:443, [2001:db8::52:0:3]:80, 2002:db8:a::45/64";
  const cases: [string, boolean][] = [
    ["localhost", false],
    ["127.0.0.1", false],
    ["127.0.0.2", false],
    ["[::1]", false],
    ["[::2]", true],
    ["192.168.1.1", false],
    ["192.168.1.2", true],
    ["192.168.1.3", false],
    ["192.168.1.4", true],
    ["10.0.0.2", false],
    ["10.0.0.4", true],
    ["[2001:db8::52:0:1]", false],
    ["[2001:db8::52:0:2]", true],
    ["[2001:db8::52:0:3]", false],
    ["[2002:db8:a::123]", false],
    ["[fe80::424b:c8be:1643:a1b6]", true],
    ["barbaz.net", true],
    ["www.barbaz.net", false],
    ["foobar.com", false],
    ["www.foobar.com", false],
    ["foofoobar.com", true],
    ["baz.com", true],
    ["localhost.net", true],
    ["local.localhost", true],
    ["barbarbaz.net", true],
    ["wildcard.io", true],
    ["nested.wildcard.io", false],
    ["awildcard.io", true],
  ];
  test("NO_PROXY: names and their subdomains, .suffixes, *.suffixes, IPs, CIDRs, ports; never loopback", () => {
    for (const [host, proxied] of cases) {
      const env = { HTTP_PROXY: "http://proxy", NO_PROXY: noProxy };
      assert.equal(proxyOf(`http://${host}:80/`, env) !== undefined, proxied, `${host} proxied: ${!proxied}`);
      const all = { HTTP_PROXY: "http://proxy", no_proxy: "*" };
      assert.equal(proxyOf(`http://${host}:80/`, all), undefined, `${host} with NO_PROXY=*`);
    }
  });

  test("NO_PROXY: the default port of the scheme, case, malformed entries, international names", () => {
    const env = (noProxy: string): Env => ({ HTTPS_PROXY: "p", HTTP_PROXY: "p", NO_PROXY: noProxy });
    assert.equal(proxyOf("https://k.tld", env("k.tld:443")), undefined);
    assert.equal(proxyOf("https://k.tld:6443", env("k.tld:443")), "http://p/");
    assert.equal(proxyOf("https://K.TLD:6443", env("k.tld:6443")), undefined);
    assert.equal(proxyOf("https://k.tld", env("K.TLD")), undefined);
    assert.equal(proxyOf("https://example.com", env(":1, , ")), "http://p/");
    assert.equal(proxyOf("http://example.com/", env(".example.com")), "http://p/");
    assert.equal(proxyOf("http://example.com/", env("ample.com")), "http://p/");
    assert.equal(proxyOf("http://www.示例.com", env(".示例.com")), undefined);
    assert.equal(proxyOf("http://www.示例.com", env("xn--fsq092h.com")), undefined);
    assert.equal(proxyOf("http://www.xn--fsq092h.com", env("示例.com")), undefined);
    assert.equal(proxyOf("https://10.96.0.1", env("10.96.0.0/12")), undefined);
    assert.equal(proxyOf("https://10.112.0.1", env("10.96.0.0/12")), "http://p/");
  });
});

describe("chooseProxy (kubectl: proxy-url, else the environment)", () => {
  test("the cluster's proxy-url wins over the environment, and applies to loopback too", () => {
    const env = { HTTPS_PROXY: "http://env-proxy:3128", NO_PROXY: "*" };
    const chosen = chooseProxy("https://127.0.0.1:6443", "http://user:secret@kube-proxy:8080", "c", env);
    assert.ok(chosen !== undefined);
    assert.equal(chosen.url.href, "http://user:secret@kube-proxy:8080/");
    assert.equal(chosen.from, "proxy-url");
    assert.equal(proxyForLog(chosen), "http://kube-proxy:8080", "logged without its credentials");
    assert.equal(chooseProxy("https://k.tld", undefined, "c", env), undefined);
    assert.equal(chooseProxy("https://k.tld", undefined, "c", { HTTPS_PROXY: "p:1" })?.from, "HTTPS_PROXY");
  });

  test("a proxy-url must have the scheme http, https or socks5", () => {
    assert.equal(chooseProxy("https://k", "socks5://s:1080", "c", {})?.url.protocol, "socks5:");
    assert.equal(chooseProxy("https://k", "https://p", "c", {})?.url.protocol, "https:");
    assert.throws(() => chooseProxy("https://k", "proxy:3128", "c", {}), /cluster "c": proxy-url .*"proxy"/);
    assert.throws(() => chooseProxy("https://k", "ftp://p", "c", {}), /must be http, https, or socks5/);
  });
});
