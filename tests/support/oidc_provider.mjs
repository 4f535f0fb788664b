// A real OpenID provider for the admin SSO tests: panva's oidc-provider (OpenID Certified), on
// 127.0.0.1, with a sign-in page of its own (the library's development pages load web fonts
// from elsewhere; tests send traffic only to loopback). Consent is given without a page.
//
// Prints {"issuer": ...} once listening, then reads one JSON line on stdin with the client to
// register ({client_id, client_secret, redirect_uri}; the gateway's port is known only once the
// gateway is up, and the gateway needs the issuer first), then prints "ready".
// Accounts come from the OIDC_ACCOUNTS variable: {"login": {"email": ..., "groups": [...]}}.
import http from 'node:http';
import readline from 'node:readline';
import querystring from 'node:querystring';

// The library is imported by path: it is installed under tests/mcp_client/npm, not beside us.
const { default: Provider } = await import(process.env.OIDC_PROVIDER_MODULE);
const accounts = JSON.parse(process.env.OIDC_ACCOUNTS || '{}');

function page(res, body, status = 200) {
  res.writeHead(status, { 'content-type': 'text/html; charset=utf-8' });
  res.end(`<!doctype html><title>Test IdP</title>${body}`);
}

async function readBody(req) {
  let text = '';
  for await (const chunk of req) text += chunk;
  return querystring.parse(text);
}

async function interaction(provider, req, res) {
  const details = await provider.interactionDetails(req, res);
  const { uid, prompt, params, session } = details;
  if (prompt.name === 'login') {
    if (req.method === 'POST') {
      const { login } = await readBody(req);
      if (!accounts[login]) {
        return page(res, `<p id="error">Unknown user</p>`, 400);
      }
      return provider.interactionFinished(req, res, { login: { accountId: login } },
        { mergeWithLastSubmission: false });
    }
    return page(res, `<h1>Test IdP</h1><form method="post" action="/interaction/${uid}">
      <label for="login">User</label><input id="login" name="login" required>
      <button id="idp-submit" type="submit">Sign in</button></form>`);
  }
  // consent: granted at once for what the client asked
  const grant = details.grantId
    ? await provider.Grant.find(details.grantId)
    : new provider.Grant({ accountId: session.accountId, clientId: params.client_id });
  if (prompt.details.missingOIDCScope) grant.addOIDCScope(prompt.details.missingOIDCScope.join(' '));
  if (prompt.details.missingOIDCClaims) grant.addOIDCClaims(prompt.details.missingOIDCClaims);
  const grantId = await grant.save();
  return provider.interactionFinished(req, res, { consent: { grantId } },
    { mergeWithLastSubmission: true });
}

const server = http.createServer();
server.listen(0, '127.0.0.1', async () => {
  const issuer = `http://127.0.0.1:${server.address().port}`;
  process.stdout.write(`${JSON.stringify({ issuer })}\n`);
  const lines = readline.createInterface({ input: process.stdin });
  const iterator = lines[Symbol.asyncIterator]();
  const client = JSON.parse((await iterator.next()).value);
  const provider = new Provider(issuer, {
    clients: [{
      client_id: client.client_id,
      client_secret: client.client_secret,
      redirect_uris: [client.redirect_uri],
      response_types: ['code'],
      grant_types: ['authorization_code'],
    }],
    pkce: { required: () => true },
    claims: { openid: ['sub'], email: ['email', 'email_verified'], groups: ['groups'] },
    // the claims in the ID token itself, as most company providers do
    conformIdTokenClaims: false,
    findAccount: async (ctx, id) => (accounts[id] ? {
      accountId: id,
      claims: async () => ({ sub: id, ...accounts[id] }),
    } : undefined),
    features: { devInteractions: { enabled: false } },
    interactions: { url: (ctx, details) => `/interaction/${details.uid}` },
    cookies: { keys: ['test-only-cookie-key'] },
  });
  const callback = provider.callback();
  server.on('request', (req, res) => {
    if (req.url.startsWith('/interaction/')) {
      interaction(provider, req, res).catch((err) => page(res, `<p>${err.message}</p>`, 500));
    } else {
      callback(req, res);
    }
  });
  process.stdout.write('ready\n');
});
