// A real OpenID provider (panva's oidc-provider, pinned in package-lock.json)
// for plugboard's OAuth tests: one or more issuers on loopback, each with the
// clients the test gives, issuing client-credentials access tokens bound to
// a resource (RFC 8707) as JWTs (RFC 9068) or opaque tokens, with
// introspection (RFC 7662) and revocation (RFC 7009) on.
//
// Usage: node oidc-provider.mjs SPEC_JSON
//   SPEC_JSON = {"scopes": "a b", "issuers": [{"clients": [{"client_id", "client_secret",
//                "format": "jwt"|"opaque", "ttl": seconds, "claims": {...}}]}]}
// Prints {"issuers": ["http://127.0.0.1:PORT", ...]} once every issuer listens,
// then serves until killed.
import http from 'node:http';
import { generateKeyPairSync } from 'node:crypto';
import Provider from 'oidc-provider';

const spec = JSON.parse(process.argv[2]);
const issuers = [];
for (const [i, is] of spec.issuers.entries()) {
  const server = http.createServer();
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const issuer = `http://127.0.0.1:${server.address().port}`;
  // Each issuer signs with a key of its own.
  const key = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ format: 'jwk' });
  const byId = Object.fromEntries(is.clients.map((c) => [c.client_id, c]));
  const provider = new Provider(issuer, {
    jwks: { keys: [{ ...key, kid: `issuer-${i}`, use: 'sig', alg: 'RS256' }] },
    clients: is.clients.map((c) => ({
      client_id: c.client_id,
      client_secret: c.client_secret,
      grant_types: ['client_credentials'],
      redirect_uris: [],
      response_types: [],
      scope: spec.scopes,
      token_endpoint_auth_method: 'client_secret_basic',
    })),
    scopes: spec.scopes.split(' '),
    features: {
      devInteractions: { enabled: false },
      clientCredentials: { enabled: true },
      introspection: { enabled: true },
      revocation: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => undefined,
        useGrantedResource: () => true,
        getResourceServerInfo: (ctx, resource, client) => {
          const c = byId[client.clientId] ?? {};
          return {
            scope: spec.scopes,
            audience: resource,
            accessTokenTTL: c.ttl ?? 600,
            accessTokenFormat: c.format ?? 'jwt',
            jwt: { sign: { alg: 'RS256' } },
          };
        },
      },
    },
    extraTokenClaims: (ctx, token) => byId[token.clientId]?.claims ?? {},
  });
  // Warnings about development settings go to stderr, not the JSON line.
  provider.on('server_error', (ctx, err) => console.error('oidc-provider:', err));
  server.on('request', provider.callback());
  issuers.push(issuer);
}
console.log(JSON.stringify({ issuers }));
