// A real OpenID provider (oidc-provider) for Depot's tests, on loopback.
// Environment: PORT (0: any), CLIENT_ID, CLIENT_SECRET, REDIRECT_URIS
// (comma-separated). Consent is given automatically; the built-in login
// form takes any password and the login name as the account. Prints
// "READY <issuer>" once it listens.
import http from 'node:http';
import { generateKeyPairSync } from 'node:crypto';
import Provider from 'oidc-provider';

const accounts = {
  alice: { email: 'alice@example.org', email_verified: true, name: 'Alice Admin', preferred_username: 'alice', groups: ['admins', 'developers'] },
  bob: { email: 'bob@example.org', email_verified: true, name: 'Bob Builder', preferred_username: 'bob', groups: ['developers'] },
};
const key = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ format: 'jwk' });

const server = http.createServer();
server.listen(Number(process.env.PORT || 0), '127.0.0.1', () => {
  const issuer = `http://127.0.0.1:${server.address().port}`;
  const provider = new Provider(issuer, {
    clients: [{
      client_id: process.env.CLIENT_ID,
      client_secret: process.env.CLIENT_SECRET,
      redirect_uris: process.env.REDIRECT_URIS.split(','),
      grant_types: ['authorization_code'],
      response_types: ['code'],
      token_endpoint_auth_method: 'client_secret_basic',
    }],
    jwks: { keys: [{ ...key, kid: 'depot-test', use: 'sig', alg: 'RS256' }] },
    cookies: { keys: ['depot-test-cookies'] },
    claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name', 'preferred_username'], groups: ['groups'] },
    scopes: ['openid', 'email', 'profile', 'groups'],
    conformIdTokenClaims: false,
    features: { devInteractions: { enabled: true } },
    async findAccount(ctx, id) {
      const a = accounts[id];
      return a && { accountId: id, async claims() { return { sub: id, ...a }; } };
    },
    async loadExistingGrant(ctx) {
      const id = ctx.oidc.result?.consent?.grantId || ctx.oidc.session.grantIdFor(ctx.oidc.client.clientId);
      if (id) return ctx.oidc.provider.Grant.find(id);
      const grant = new ctx.oidc.provider.Grant({ clientId: ctx.oidc.client.clientId, accountId: ctx.oidc.session.accountId });
      grant.addOIDCScope('openid email profile groups');
      await grant.save();
      return grant;
    },
  });
  server.on('request', provider.callback());
  console.log(`READY ${issuer}`);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
