import 'reflect-metadata';
import { Logger } from '@nestjs/common';
import { inspect } from 'node:util';
import { PaymentServerError } from '../../lib/client/payment-api.errors.js';
import { PaymentGatewayService } from '../../lib/client/payment-gateway.service.js';
import type { PaymentModuleOptions } from '../../lib/config/payment-module-options.interface.js';
import { resolvePaymentOptions } from '../../lib/config/payment-options.resolver.js';
import { ClientFakeClock } from '../support/client-fake-clock.js';
import { captureLogs, rejectionOf, SANDBOX_CLIENT, startClientHarness } from '../support/client-simulator.js';
import { ClientStubServer, success } from '../support/client-stub-server.js';
import { waitFor } from '../support/wait.js';

const recipient = { account_number: '0123456789' };

/**
 * Answers the simulator does not give (payload shapes are not published): a canned-JSON
 * service on loopback, reached over real HTTP by a real client on a virtual clock.
 */
describe('PaymentGatewayService reads success answers tolerantly', () => {
  let stub: ClientStubServer;
  let client: PaymentGatewayService;
  let clock: ClientFakeClock;

  async function start(options: PaymentModuleOptions = {}): Promise<void> {
    Logger.overrideLogger(false);
    stub = await new ClientStubServer().start();
    const resolved = resolvePaymentOptions({ baseUrl: stub.url, ...SANDBOX_CLIENT, retryBaseDelayMs: 10, ...options });
    clock = new ClientFakeClock(Date.UTC(2026, 0, 1), true);
    client = new PaymentGatewayService(resolved, { clock, random: () => 0.5 });
  }

  afterEach(async () => {
    client?.onApplicationShutdown();
    await stub?.stop();
  });

  describe('the token call (its body shape is not published)', () => {
    it('sends { client_id, client_secret } as JSON by default', async () => {
      await start();
      await client.listGateways().catch(() => undefined);
      const [token] = stub.calls('/authentication/token');
      expect(token.headers['content-type']).toBe('application/json');
      expect(token.body).toEqual({ client_id: SANDBOX_CLIENT.clientId, client_secret: SANDBOX_CLIENT.clientSecret });
    });

    it('tokenRequest renames the fields and form-encodes the body', async () => {
      await start({ tokenRequest: { clientIdField: 'username', clientSecretField: 'password', encoding: 'form' } });
      await client.listGateways().catch(() => undefined);
      const [token] = stub.calls('/authentication/token');
      expect(token.headers['content-type']).toBe('application/x-www-form-urlencoded');
      expect(Object.fromEntries(new URLSearchParams(String(token.body)))).toEqual({
        username: SANDBOX_CLIENT.clientId,
        password: SANDBOX_CLIENT.clientSecret,
      });
    });

    it('a token answer echoing the form body shows no client secret, in any of its encodings', async () => {
      const clientSecret = 'cs+/=s3cr"et v@lue';
      await start({ clientSecret, tokenRequest: { encoding: 'form' }, maxRetries: 0 });
      const echoed = new URLSearchParams({ client_id: SANDBOX_CLIENT.clientId, client_secret: clientSecret }).toString();
      const message = `cannot read ${echoed} / ${encodeURIComponent(clientSecret)} / ${JSON.stringify(clientSecret)}`;
      stub.answer('POST', '/authentication/token', { status: 400, body: { status: 'error', code: 'PAY_4000', message, errors: {}, data: [] } });
      const error = await rejectionOf(client.listGateways());
      const rendered = `${error.message} ${JSON.stringify(error)} ${String(error.stack)}`;
      for (const form of [clientSecret, encodeURIComponent(clientSecret), echoed.split('client_secret=')[1]!, JSON.stringify(clientSecret).slice(1, -1)]) {
        expect(rendered).not.toContain(form);
      }
      expect(error.message).toContain("the answer's message is not quoted");
    });

    it("a failed token call's error quotes no text of the answer (an echo of the request may hide the client secret, e.g. base64-encoded): its code, status and field names only", async () => {
      const clientSecret = 'cs_live_9f8e7d6c5b4a39281706';
      await start({ clientSecret, maxRetries: 0 });
      const body = Buffer.from(JSON.stringify({ client_id: SANDBOX_CLIENT.clientId, client_secret: clientSecret })).toString('base64');
      stub.answer('POST', '/authentication/token', {
        status: 400,
        body: { status: 'error', code: 'PAY_4000', message: `cannot read body ${body}`, errors: { client_secret: [`invalid: ${body}`] }, data: [] },
      });
      const error = await rejectionOf(client.listGateways());
      const rendered = `${error.message} ${JSON.stringify(error)} ${String(error.stack)} ${inspect(error, { depth: 10 })}`;
      expect(rendered).not.toContain(body);
      expect(error).toMatchObject({ code: 'PAY_4000', httpStatus: 400, errors: { client_secret: [] } });
      expect(error.message).toContain('POST /authentication/token failed with HTTP 400 PAY_4000');
      expect(error.message).toContain('not quoted');
    });

    it("a failed token call keeps a code or field name only when it is named (the spec's codes, the request's fields) or plain words: an encoded echo of the secret passes for an identifier", async () => {
      const clientSecret = 'cs_live_TopSecretValue_9931';
      await start({ clientSecret, maxRetries: 0, tokenRequest: { clientSecretField: 'secret' } });
      const encoded = Buffer.from(clientSecret).toString('base64').replace(/=+$/, ''); // letters and digits only
      stub.answer('POST', '/authentication/token', {
        status: 400,
        body: { status: 'error', code: `X${encoded}`, message: 'x', errors: { [`F${encoded}`]: ['x'], secret: ['x'], client_id: ['x'], 'x-1': ['x'], body: ['x'] }, data: [] },
      });
      const error = await rejectionOf(client.listGateways());
      const rendered = `${error.message} ${JSON.stringify(error)} ${String(error.stack)} ${inspect(error, { depth: 10 })}`;
      expect(rendered).not.toContain(encoded);
      // the request's fields (client_id, and clientSecretField's name) and plain words stay; other names go
      expect(error).toMatchObject({ code: 'HTTP_400', httpStatus: 400 });
      expect(Object.keys(error.errors)).toEqual(['secret', 'client_id', 'body']);

      // a code of the spec's list, or of plain words, stays as before
      stub.answer('POST', '/authentication/token', { status: 401, body: { status: 'error', code: 'PAY_1004', message: 'x', errors: {}, data: [] } });
      expect(await rejectionOf(client.listGateways())).toMatchObject({ code: 'PAY_1004', httpStatus: 401 });
      stub.answer('POST', '/authentication/token', { status: 400, body: { status: 'error', code: 'INVALID_CLIENT', message: 'x', errors: {}, data: [] } });
      expect(await rejectionOf(client.listGateways())).toMatchObject({ code: 'INVALID_CLIENT', httpStatus: 400 });
    });

    it('a client secret of three characters echoed by the service is redacted too', async () => {
      await start({ clientSecret: 'k9Z', maxRetries: 0 });
      stub.answer('POST', '/authentication/token', {
        status: 400,
        body: { status: 'error', code: 'PAY_4000', message: 'bad secret k9Z', errors: { client_secret: ['k9Z is not valid'] }, data: [] },
      });
      const error = await rejectionOf(client.listGateways());
      const rendered = `${error.message} ${JSON.stringify(error)} ${String(error.stack)} ${inspect(error, { depth: 10 })}`;
      expect(rendered).not.toContain('k9Z');
      expect(error).toMatchObject({ code: 'PAY_4000', errors: { client_secret: [] } });
    });

    it('the token a call held through a long wait is redacted from its error, however many tokens were issued meanwhile', async () => {
      Logger.overrideLogger(false);
      stub = await new ClientStubServer().start();
      const resolved = resolvePaymentOptions({ baseUrl: stub.url, ...SANDBOX_CLIENT, rateLimits: false, maxRetries: 1 });
      clock = new ClientFakeClock(Date.UTC(2026, 0, 1)); // driven by the test
      client = new PaymentGatewayService(resolved, { clock, random: () => 0.5 });
      const refundRoute = '/payment/trx_1/refund';
      stub.answer('POST', refundRoute, { status: 429, headers: { 'retry-after': '60' }, body: { status: 'error', code: 'RATE_LIMITED', message: 'slow down', errors: {}, data: [] } });
      const refund = rejectionOf(client.refundPayment('trx_1', { amount: '1' }));
      await waitFor('the refund waits out its Retry-After', () => clock.pendingSleepers === 1);
      const held = stub.issuedTokens[0]!;
      // each payment creation takes a token of its own: the refund's is no longer among the recent ones
      stub.answer('POST', '/payment/create', success({ trxId: 'trx_new', paymentUrl: 'https://pay.example/x' }, 201));
      for (let i = 0; i < 20; i++) await client.createPayment({ amount: '1', currency: 'USD' });
      expect(stub.issuedTokens.length).toBeGreaterThan(17);
      // the service's answer to the refund's retry repeats the header it was sent
      const echo = `rejected request with Authorization: Bearer ${held}`;
      stub.answer('POST', refundRoute, { status: 400, body: { status: 'error', code: 'PAY_4000', message: echo, errors: { authorization: [echo] }, data: [] } });
      clock.advance(60_000);
      const error = await refund;
      // the retry read the shared token again (the newest); its answer echoes the first attempt's
      const sent = stub.calls(refundRoute).map((c) => c.headers.authorization);
      expect(sent).toEqual([`Bearer ${held}`, `Bearer ${stub.issuedTokens.at(-1)}`]);
      const dump = [error.message, String(error.stack), JSON.stringify(error), inspect(error, { depth: 10, showHidden: true })].join('\n');
      expect(dump).not.toContain(held);
      expect(error.message).toContain('Bearer [redacted]');
    });

    it("the bearer token is redacted from an error whose message echoes the Authorization header base64-encoded", async () => {
      Logger.overrideLogger(false);
      stub = await new ClientStubServer().start();
      client = new PaymentGatewayService(resolvePaymentOptions({ baseUrl: stub.url, ...SANDBOX_CLIENT, rateLimits: false }));
      const token = 'tok_8f3a9b2c7d1e6f50a4';
      stub.answer('POST', '/authentication/token', success({ access_token: token, expires_in: 600 }));
      const echo = `rejected header ${Buffer.from(`Bearer ${token}`).toString('base64')}`;
      stub.answer('POST', '/payment/trx_1/refund', { status: 400, body: { status: 'error', code: 'PAY_4000', message: echo, errors: { authorization: [echo] }, data: [] } });
      const error = await rejectionOf(client.refundPayment('trx_1', { amount: '1' }));
      expect(stub.calls('/payment/trx_1/refund').map((c) => c.headers.authorization)).toEqual([`Bearer ${token}`]);
      const dump = [error.message, String(error.stack), JSON.stringify(error), inspect(error, { depth: 10, showHidden: true })].join('\n');
      // the characters that encode the token's bytes alone (it starts at byte 7 of `Bearer <token>`)
      const encodedToken = Buffer.from(`Bearer ${token}`).toString('base64').slice(Math.ceil((8 * 7) / 6), Math.floor((8 * (7 + token.length)) / 6));
      expect(dump).not.toContain(encodedToken);
      expect(error.message).toContain('rejected header');
    });

    it('a retry after a long Retry-After takes the token again: one renewed meanwhile is sent, not the one the first attempt held', async () => {
      Logger.overrideLogger(false);
      stub = await new ClientStubServer().start();
      const resolved = resolvePaymentOptions({ baseUrl: stub.url, ...SANDBOX_CLIENT, rateLimits: false, maxRetries: 1, maxRetryAfterMs: 120_000 });
      clock = new ClientFakeClock(Date.UTC(2026, 0, 1)); // driven by the test
      client = new PaymentGatewayService(resolved, { clock, random: () => 0.5 });
      // renewed a minute before it expires: usable for 30 s
      stub.answer('POST', '/authentication/token', success({ access_token: 'tok_short', expires_in: 90 }), success({ access_token: 'tok_next', expires_in: 600 }));
      const refundRoute = '/payment/trx_1/refund';
      stub.answer(
        'POST',
        refundRoute,
        { status: 429, headers: { 'retry-after': '100' }, body: { status: 'error', code: 'RATE_LIMITED', message: 'slow down', errors: {}, data: [] } },
        success({ refund_uid: 'rfd_1' }, 201),
      );
      const refund = client.refundPayment('trx_1', { amount: '1' });
      await waitFor('the refund waits out its Retry-After', () => clock.pendingSleepers === 1);
      clock.advance(100_000);
      await expect(refund).resolves.toMatchObject({ refundUid: 'rfd_1' });
      // was tok_short twice: past its lifetime, the service answers PAY_1003 and the call spends a round on it
      expect(stub.calls(refundRoute).map((c) => c.headers.authorization)).toEqual(['Bearer tok_short', 'Bearer tok_next']);
    });

    it('a lifetime beyond the documented 10 minutes is cut: the token is renewed before the service refuses it', async () => {
      await start();
      stub.answer('POST', '/authentication/token', success({ access_token: 'tok_day', expires_in: 86_400 }));
      stub.answer('GET', '/payments/gateways', success([]));
      await client.listGateways();
      clock.advance(9 * 60_000 + 1_000); // inside the refresh margin of a 10-minute token
      await client.listGateways();
      expect(stub.calls('/authentication/token')).toHaveLength(2);
    });
  });

  describe('ids spelled camelCase or snake_case', () => {
    it('createPayment reads trx_id and fills trxId', async () => {
      await start();
      stub.answer('POST', '/payment/create', success({ trx_id: 'trx_snake', token: 'sess_1', status: 'PENDING' }));
      const payment = await client.createPayment({ amount: '5', currency: 'USD' });
      expect(payment).toMatchObject({ trxId: 'trx_snake', trx_id: 'trx_snake', token: 'sess_1', status: 'PENDING', pending: false, httpStatus: 200 });
      expect(payment.raw).toEqual({ status: 'success', data: { trx_id: 'trx_snake', token: 'sess_1', status: 'PENDING' } });
    });

    it('refundPayment reads refund_uid (201) and keeps the refunded payment id', async () => {
      await start();
      stub.answer('POST', '/payment/trx_9/refund', success({ refund_uid: 'rfd_snake', amount: '1.00000000', status: 'SUCCESS' }, 201));
      const refund = await client.refundPayment('trx_9', { amount: '1' });
      expect(refund).toMatchObject({ refundUid: 'rfd_snake', trxId: 'trx_9', status: 'SUCCESS', httpStatus: 201 });
    });

    it('createPayout reads payout_uid, also on 202', async () => {
      await start();
      stub.answer('POST', '/payout', success({ payout_uid: 'pyo_snake', status: 'PENDING_APPROVAL' }, 202));
      const payout = await client.createPayout({ amount: '1', currency: 'USD', recipient });
      expect(payout).toMatchObject({ payoutUid: 'pyo_snake', pendingApproval: true, httpStatus: 202 });
    });

    it('lookups read snake_case ids, or fall back to the id they asked for', async () => {
      await start();
      stub.answer('GET', '/refund/rfd_1', success({ refund_uid: 'rfd_1', status: 'SUCCESS' }));
      stub.answer('GET', '/payout/pyo_1', success({ status: 'SUCCESS' }));
      expect(await client.getRefund('rfd_1')).toMatchObject({ refundUid: 'rfd_1', status: 'SUCCESS' });
      expect(await client.getPayout('pyo_1')).toMatchObject({ payoutUid: 'pyo_1', status: 'SUCCESS' });
    });

    it("a lookup answered with another record (its id differs) is UNEXPECTED_RESPONSE, not that record's status as this one's", async () => {
      await start();
      stub.answer('GET', '/refund/rfd_1', success({ refundUid: 'rfd_2', status: 'SUCCESS' }));
      stub.answer('GET', '/payout/pyo_1', success({ payout_uid: 'pyo_2', status: 'SUCCESS' }));
      stub.answer('GET', '/payout/7', success({ payoutUid: '007', status: 'SUCCESS' }));
      // was resolved as rfd_2's / pyo_2's record: after a mayHaveReachedService error, another payout's SUCCESS read as this one's
      expect(await rejectionOf(client.getRefund('rfd_1'))).toMatchObject({
        code: 'UNEXPECTED_RESPONSE',
        message: 'GET /refund/rfd_1 succeeded but the answer does not hold refundUid rfd_1 (it is about rfd_2; see responseFields.refundUid)',
      });
      expect(await rejectionOf(client.getPayout('pyo_1'))).toMatchObject({ code: 'UNEXPECTED_RESPONSE' });
      // the same whole number is the same id
      await expect(client.getPayout('7')).resolves.toMatchObject({ payoutUid: '007', status: 'SUCCESS' });
    });

    it('never repeats a bearer token or the client secret that an answer about another id carries as its id', async () => {
      await start();
      await client.listGateways().catch(() => undefined); // takes a token
      const token = stub.issuedTokens[0]!;
      stub.answer('GET', '/refund/rfd_1', success({ refundUid: token, status: 'SUCCESS' }));
      stub.answer('GET', '/payment/status', success({ trxId: `${SANDBOX_CLIENT.clientSecret}-x`, status: 'SUCCESS' }));
      const refund = await rejectionOf(client.getRefund('rfd_1'));
      const status = await rejectionOf(client.getPaymentStatus('trx_1'));
      for (const error of [refund, status]) expect(error).toMatchObject({ code: 'UNEXPECTED_RESPONSE', message: expect.stringContaining('(it is about [redacted]') });
      const rendered = [refund, status].map((error) => `${error.message} ${error.stack} ${JSON.stringify(error)} ${inspect(error)}`).join('\n');
      expect(rendered).not.toContain(token);
      expect(rendered).not.toContain(SANDBOX_CLIENT.clientSecret);
    });

    it('an answer without data gives its ids but not the envelope status as the record status', async () => {
      await start();
      stub.answer('POST', '/payment/trx_9/refund', { status: 201, body: { status: 'success', refund_uid: 'rfd_flat' } });
      stub.answer('GET', '/payout/pyo_1', { status: 200, body: { status: 'success', message: 'found' } });
      const refund = await client.refundPayment('trx_9');
      expect(refund).toMatchObject({ refundUid: 'rfd_flat', trxId: 'trx_9', httpStatus: 201, raw: { status: 'success', refund_uid: 'rfd_flat' } });
      expect('status' in refund).toBe(false);
      const payout = await client.getPayout('pyo_1');
      expect(payout).toMatchObject({ payoutUid: 'pyo_1', message: 'found' });
      expect('status' in payout).toBe(false);
    });

    it('an answer without data still gives a status from another field responseFields.status names', async () => {
      await start({ responseFields: { status: ['refund_status', 'status'] } });
      stub.answer('POST', '/payment/trx_9/refund', { status: 201, body: { status: 'success', refund_uid: 'rfd_flat', refund_status: 'FAILED' } });
      expect(await client.refundPayment('trx_9')).toMatchObject({ refundUid: 'rfd_flat', status: 'FAILED' });
    });

    it('a numeric id is read as text', async () => {
      await start();
      stub.answer('POST', '/payment/create', success({ trx_id: 40017, token: 'sess_2', status: 'PENDING' }));
      expect((await client.createPayment({ amount: '5', currency: 'USD' })).trxId).toBe('40017');
    });

    it('responseFields says where to read ids and status', async () => {
      await start({ responseFields: { refundUid: ['id'], status: ['state'] } });
      stub.answer('POST', '/payment/trx_9/refund', success({ id: 'r-77', state: 'QUEUED', status: 'ignored' }, 201));
      expect(await client.refundPayment('trx_9')).toMatchObject({ refundUid: 'r-77', status: 'QUEUED' });
    });

    it('a typed field never holds a value of another type: it is left out, the answer stays in raw', async () => {
      await start();
      const data = { refundUid: null, refund_uid: 7.5, status: { code: 'OK' } };
      stub.answer('POST', '/payment/trx_9/refund', success(data, 201));
      const refund = await client.refundPayment('trx_9');
      expect('refundUid' in refund).toBe(false);
      expect('status' in refund).toBe(false);
      expect(refund.raw).toEqual({ status: 'success', data });
    });

    it('a created payment whose token is not text has no token (typed `token?: string`)', async () => {
      await start();
      const data = { trxId: 'trx_t', token: { session: 'sess_obj' }, status: 'PENDING' };
      stub.answer('POST', '/payment/create', success(data));
      const payment = await client.createPayment({ amount: '1', currency: 'USD' });
      expect('token' in payment).toBe(false);
      expect(payment).toMatchObject({ trxId: 'trx_t', status: 'PENDING', raw: { status: 'success', data } });
    });
  });

  describe('a 2xx without an id resolves (the service acted), with the raw answer and a warning', () => {
    type Call = (c: PaymentGatewayService) => Promise<object>;
    it.each<[string, string, string, number, Call, string]>([
      ['refund', 'POST', '/payment/trx_9/refund', 201, (c: PaymentGatewayService) => c.refundPayment('trx_9', { amount: '1' }), 'refundUid'],
      ['payout', 'POST', '/payout', 201, (c: PaymentGatewayService) => c.createPayout({ amount: '1', currency: 'USD', recipient }), 'payoutUid'],
      ['payment', 'POST', '/payment/create', 200, (c: PaymentGatewayService) => c.createPayment({ amount: '1', currency: 'USD' }), 'trxId'],
    ])('%s', async (_label, method, route, status, call, idField) => {
      await start();
      const body = { status: 'success', data: { reference: 'svc-123', status: 'ACCEPTED' } };
      stub.answer(method, route, { status, body });
      const { result, error, lines } = await captureLogs(() => call(client));
      expect(error).toBeUndefined();
      const record = result as unknown as Record<string, unknown>;
      expect(record[idField]).toBeUndefined();
      expect(record).toMatchObject({ httpStatus: status, raw: body, reference: 'svc-123', status: 'ACCEPTED' });
      expect(stub.calls(route, method)).toHaveLength(1); // never sent twice
      const warning = lines.find((l) => l.includes(`responseFields.${idField}`));
      expect(warning).toContain(route);
      expect(warning).toContain('(account default)'); // several accounts: which one
      expect(warning).not.toContain('svc-123'); // the answer itself is not logged
    });
  });

  describe('a 2xx whose body is cut short (the status line and headers came, then a reset)', () => {
    it('a refund resolves without its fields (the service acted), is sent once, and the warning says why', async () => {
      await start();
      stub.answer('POST', '/payment/trx_9/refund', { ...success({ refundUid: 'rfd_1', pad: 'x'.repeat(64 * 1024) }, 201), cutBody: true });
      const { result, error, lines } = await captureLogs(() => client.refundPayment('trx_9', { amount: '1' }));
      expect(error).toBeUndefined();
      expect(result).toMatchObject({ httpStatus: 201, raw: undefined });
      expect((result as { refundUid?: string }).refundUid).toBeUndefined();
      expect(stub.calls('/payment/trx_9/refund')).toHaveLength(1);
      expect(lines.find((l) => l.includes('answered 201, but its body could not be read'))).toContain('the service acted on it');
    });

    it('an app logger that throws changes no outcome: a refund the service carried out still resolves, with or without its id', async () => {
      await start();
      stub.answer('POST', '/payment/trx_9/refund', { ...success({ refundUid: 'rfd_1', pad: 'x'.repeat(64 * 1024) }, 201), cutBody: true });
      stub.answer('POST', '/payment/trx_8/refund', success({ reference: 'no id here' }, 201));
      // a log transport that failed (closed, full): the refunds rejected with its error, though the service made them
      Logger.overrideLogger({ log() {}, error() {}, debug() {}, verbose() {}, warn: () => { throw new Error('log transport closed'); } });
      try {
        await expect(client.refundPayment('trx_9', { amount: '1' })).resolves.toMatchObject({ httpStatus: 201 });
        await expect(client.refundPayment('trx_8', { amount: '1' })).resolves.toMatchObject({ httpStatus: 201 });
      } finally {
        Logger.overrideLogger(false);
      }
      expect(stub.calls('/payment/trx_9/refund')).toHaveLength(1);
      expect(stub.calls('/payment/trx_8/refund')).toHaveLength(1);
    });

    it("the token call's answer cut short: the refund is not sent, and its error carries no status of its own", async () => {
      await start({ maxRetries: 1 });
      stub.answer('POST', '/authentication/token', { ...success({ access_token: 'tok_cut_00000001', pad: 'x'.repeat(64 * 1024) }), cutBody: true });
      const refused = await rejectionOf(client.refundPayment('trx_9', { amount: '1' }));
      expect(refused).toMatchObject({ code: 'NETWORK_ERROR', httpStatus: undefined, mayHaveReachedService: false });
      expect(refused.message).toContain('was not sent');
      expect(stub.calls('/payment/trx_9/refund')).toHaveLength(0);
    });

    it('a status read is retried and gives the next answer; the error after the last retry says the service answered', async () => {
      await start({ maxRetries: 1 });
      const cut = { ...success({ status: 'SUCCESS', pad: 'x'.repeat(64 * 1024) }), cutBody: true };
      stub.answer('GET', '/payment/status', cut, success({ status: 'SUCCESS' }));
      await expect(client.getPaymentStatus('trx_7')).resolves.toMatchObject({ status: 'SUCCESS' });
      expect(stub.calls('/payment/status')).toHaveLength(2);
      stub.answer('GET', '/payment/status', cut);
      const error = await rejectionOf(client.getPaymentStatus('trx_8'));
      expect(error).toMatchObject({ code: 'NETWORK_ERROR', httpStatus: 200, mayHaveReachedService: true });
      expect(error.message).toContain('was answered 200, but its body could not be read');
    });
  });

  describe("a 2xx whose body is not the service's JSON (a firewall's page)", () => {
    it('a payment creation is asked for again under its idempotency key, and resolves with the payment', async () => {
      await start();
      const page = { status: 200, body: undefined, html: '<html><body>Request blocked</body></html>' };
      stub.answer('POST', '/payment/create', page, success({ trxId: 'trx_after_page' }));
      const created = await client.createPayment({ amount: '1', currency: 'USD' }, { idempotencyKey: 'order-page-1' });
      expect(created.trxId).toBe('trx_after_page');
      const sent = stub.calls('/payment/create', 'POST');
      expect(sent).toHaveLength(2);
      expect(sent.map((r) => (r.body as { idempotency_key?: string }).idempotency_key)).toEqual(['order-page-1', 'order-page-1']);
    });

    it('a payment creation answered so on every attempt fails with its idempotency key (the one the client made), to ask again under it', async () => {
      await start({ maxRetries: 1 });
      const page = { status: 200, body: undefined, html: '<html><body>Request blocked</body></html>' };
      stub.answer('POST', '/payment/create', page, page);
      const error = await rejectionOf(client.createPayment({ amount: '1', currency: 'USD' }));
      const keys = stub.calls('/payment/create', 'POST').map((r) => (r.body as { idempotency_key?: string }).idempotency_key);
      expect(keys).toEqual([keys[0], keys[0]]);
      expect(error).toMatchObject({ code: 'NETWORK_ERROR', httpStatus: 200, mayHaveReachedService: true, idempotencyKey: keys[0], account: 'default' });
    });

    it.each(['1', 'true', 'null'])('a refund answered 2xx with a text/html page that reads as JSON (%s) stays an unknown outcome: only a JSON media type makes a value the service\'s', async (page) => {
      await start();
      stub.answer('POST', '/payment/trx_9/refund', { status: 201, body: undefined, html: page });
      const error = await rejectionOf(client.refundPayment('trx_9', { amount: '1' }));
      expect(error).toMatchObject({ code: 'NETWORK_ERROR', httpStatus: 201, mayHaveReachedService: true });
      expect(stub.calls('/payment/trx_9/refund', 'POST')).toHaveLength(1);
    });

    it('a refund or a payout answered 2xx with JSON that is no object (null, a list) resolves without fields: JSON is the service\'s, and it acted', async () => {
      await start();
      stub.answer('POST', '/payment/trx_9/refund', { status: 201, body: null });
      stub.answer('POST', '/payout', { status: 201, body: [] });
      const { result: refund, error, lines } = await captureLogs(() => client.refundPayment('trx_9', { amount: '1' }));
      expect(error).toBeUndefined();
      expect(refund).toMatchObject({ httpStatus: 201 });
      expect(refund!.refundUid).toBeUndefined();
      expect(lines.some((l) => l.includes('responseFields.refundUid'))).toBe(true);
      await expect(client.createPayout({ amount: '1', currency: 'USD', recipient })).resolves.toMatchObject({ httpStatus: 201 });
      expect(stub.calls('/payment/trx_9/refund', 'POST')).toHaveLength(1);
      expect(stub.calls('/payout', 'POST')).toHaveLength(1);
    });

    it('a refund or a payout is not sent again, and fails as an unknown outcome (it resolved as if the service had taken it)', async () => {
      await start();
      const page = { status: 201, body: undefined, html: '<html>Please log in to the network</html>' };
      stub.answer('POST', '/payment/trx_9/refund', page);
      stub.answer('POST', '/payout', page);
      const refund = await rejectionOf(client.refundPayment('trx_9', { amount: '1' }));
      const payout = await rejectionOf(client.createPayout({ amount: '1', currency: 'USD', recipient }));
      for (const [error, path] of [[refund, '/payment/trx_9/refund'], [payout, '/payout']] as const) {
        expect(error).toMatchObject({ code: 'NETWORK_ERROR', httpStatus: 201, mayHaveReachedService: true, account: 'default' });
        expect(error.message).toContain(`POST ${path} was answered 201, but its body is not the service's JSON`);
        expect(stub.calls(path, 'POST')).toHaveLength(1);
      }
    });

    it('an empty page is one too: a refund or a payout answered 2xx with no bytes as text/html fails as an unknown outcome, sent once', async () => {
      await start();
      // resolved as a refund without an id: the app recorded as done a refund that may never have reached the service
      const page = { status: 200, body: undefined, html: '' };
      stub.answer('POST', '/payment/trx_9/refund', page);
      stub.answer('POST', '/payout', page);
      const refund = await rejectionOf(client.refundPayment('trx_9', { amount: '1' }));
      const payout = await rejectionOf(client.createPayout({ amount: '1', currency: 'USD', recipient }));
      for (const [error, path] of [[refund, '/payment/trx_9/refund'], [payout, '/payout']] as const) {
        expect(error).toMatchObject({ code: 'NETWORK_ERROR', httpStatus: 200, mayHaveReachedService: true });
        expect(stub.calls(path, 'POST')).toHaveLength(1);
      }
    });

    it.each([
      ['no media type', null, 200],
      ['application/json', 'application/json', 201],
      ['a 204', 'text/html', 204],
    ])('an empty 2xx with %s is the service saying nothing: a refund resolves without fields, with the warning that it acted', async (_label, contentType, status) => {
      await start();
      stub.answer('POST', '/payment/trx_9/refund', { status, body: undefined, html: '', contentType });
      const { result, error, lines } = await captureLogs(() => client.refundPayment('trx_9', { amount: '1' }));
      expect(error).toBeUndefined();
      expect(result).toMatchObject({ httpStatus: status });
      expect(result!.refundUid).toBeUndefined();
      expect(lines.some((l) => l.includes('responseFields.refundUid'))).toBe(true);
      expect(stub.calls('/payment/trx_9/refund', 'POST')).toHaveLength(1);
    });

    it('request() likewise: a subaccount payout (not idempotent) is an unknown outcome, sent once; a read is asked again', async () => {
      await start({ maxRetries: 1 });
      const page = { status: 200, body: undefined, html: '<html>Session expired</html>' };
      stub.answer('POST', '/subaccount/sa_1/payout', page);
      stub.answer('GET', '/subaccount/sa_1', page, success({ id: 'sa_1' }));
      // was resolved with the page as data: a payout that may never have reached the service recorded as done
      const error = await rejectionOf(client.request({ method: 'POST', path: '/subaccount/sa_1/payout', body: { amount: '10', currency: 'USD' } }));
      expect(error).toMatchObject({ code: 'NETWORK_ERROR', httpStatus: 200, mayHaveReachedService: true });
      expect(stub.calls('/subaccount/sa_1/payout', 'POST')).toHaveLength(1);
      await expect(client.request({ method: 'GET', path: '/subaccount/sa_1' })).resolves.toMatchObject({ httpStatus: 200, data: { id: 'sa_1' } });
      expect(stub.calls('/subaccount/sa_1', 'GET')).toHaveLength(2);
    });
  });

  describe('getPaymentStatus', () => {
    it('works with data.status only: the asked id, pending false on 200', async () => {
      await start();
      stub.answer('GET', '/payment/status', success({ status: 'SUCCESS' }));
      const status = await client.getPaymentStatus('trx_asked');
      expect(status).toEqual({
        status: 'SUCCESS',
        trxId: 'trx_asked',
        pending: false,
        httpStatus: 200,
        raw: { status: 'success', data: { status: 'SUCCESS' } },
      });
      expect(stub.calls('/payment/status')[0].query).toEqual({ trx_id: 'trx_asked' });
    });

    it('says when the service answered 202', async () => {
      await start();
      stub.answer('GET', '/payment/status', success({ trx_id: 'trx_asked', status: 'PENDING' }, 202));
      expect(await client.getPaymentStatus('trx_asked')).toMatchObject({ trxId: 'trx_asked', status: 'PENDING', pending: true, httpStatus: 202 });
    });

    it.each([
      ['another id', { trx_id: 'trx_other', status: 'SUCCESS' }],
      ['another id, as a number', { trxId: 42, status: 'SUCCESS' }],
    ])('an answer about %s is UNEXPECTED_RESPONSE: its status is never taken for the payment asked about', async (_label, data) => {
      await start();
      stub.answer('GET', '/payment/status', success(data));
      const error = await rejectionOf(client.getPaymentStatus('trx_asked'));
      expect(error).toBeInstanceOf(PaymentServerError);
      expect(error).toMatchObject({ code: 'UNEXPECTED_RESPONSE', method: 'GET', path: '/payment/status' });
      expect(error.message).toContain('trx_asked');
      // the same id in another form is that payment's: read as text from a number, with spaces, with leading zeros
      for (const [answered, asked] of [[42, '42'], [' trx_asked ', 'trx_asked'], [7, '007']] as const) {
        stub.answer('GET', '/payment/status', success({ trxId: answered, status: 'SUCCESS' }));
        await expect(client.getPaymentStatus(asked)).resolves.toMatchObject({ status: 'SUCCESS' });
      }
      // letter case counts: two ids may differ only there
      stub.answer('GET', '/payment/status', success({ trxId: 'TRX_ASKED', status: 'SUCCESS' }));
      await expect(client.getPaymentStatus('trx_asked')).rejects.toMatchObject({ code: 'UNEXPECTED_RESPONSE' });
    });

    it('an answer without a status is UNEXPECTED_RESPONSE naming the fields (a read: nothing changed)', async () => {
      await start();
      stub.answer('GET', '/payment/status', success({ trx_id: 'trx_asked' }));
      const error = await rejectionOf(client.getPaymentStatus('trx_asked'));
      expect(error).toBeInstanceOf(PaymentServerError);
      expect(error).toMatchObject({ code: 'UNEXPECTED_RESPONSE' });
      expect(error.message).toContain('responseFields.status');
    });

    it.each([
      ['an envelope without data', { status: 'success', message: 'Payment is pending' }],
      ['a body that is no envelope', { trx_id: 'trx_asked', status: 'SUCCESS' }],
    ])('%s is UNEXPECTED_RESPONSE: a status is read from data alone, never the envelope\'s own', async (_label, body) => {
      await start();
      stub.answer('GET', '/payment/status', { status: 200, body });
      const error = await rejectionOf(client.getPaymentStatus('trx_asked'));
      expect(error).toBeInstanceOf(PaymentServerError);
      expect(error).toMatchObject({ code: 'UNEXPECTED_RESPONSE', method: 'GET', path: '/payment/status', mayHaveReachedService: false });
      expect(stub.calls('/payment/status')).toHaveLength(1); // a read's wrong shape is not retried
    });
  });

  describe('apiBasePath (the service shows no version policy)', () => {
    it('every call, the token call included, goes under the configured path instead of /sandbox/api/v1', async () => {
      await start({ apiBasePath: '/api/v2/' });
      stub.answer('POST', '/api/v2/authentication/token', success({ access_token: 'tok_v2', expires_in: 600 }));
      stub.answer('GET', '/api/v2/payments/gateways', success([{ id: 'card' }]));
      await expect(client.listGateways()).resolves.toEqual([{ id: 'card' }]);
      expect(stub.requests.map((r) => `${r.method} ${r.route}`)).toEqual(['POST /api/v2/authentication/token', 'GET /api/v2/payments/gateways']);
    });
  });

  describe('listGateways', () => {
    it.each([
      ['a list', [{ id: 'card' }, { id: 'bkash' }]],
      ['{ gateways: [...] }', { gateways: [{ id: 'card' }, { id: 'bkash' }] }],
      ['{ items: [...], total }', { items: [{ id: 'card' }, { id: 'bkash' }], total: 2 }],
      ['its only list', { available: [{ id: 'card' }, { id: 'bkash' }], updatedAt: 'now' }],
      ['a map of id to gateway', { card: { name: 'Card' }, bkash: { name: 'bKash' } }],
      ['a list of names', ['card', 'bkash']],
    ])('reads %s', async (_label, data) => {
      await start();
      stub.answer('GET', '/payments/gateways', success(data));
      const gateways = await client.listGateways();
      expect(gateways.map((g) => g.id)).toEqual(['card', 'bkash']);
    });

    it('anything else is UNEXPECTED_RESPONSE', async () => {
      await start();
      stub.answer('GET', '/payments/gateways', success('card,bkash'));
      expect(await rejectionOf(client.listGateways())).toMatchObject({ code: 'UNEXPECTED_RESPONSE' });
    });
  });
});

describe('getPaymentStatus against the simulator', () => {
  it('reports httpStatus and pending: false on 200', async () => {
    const h = await startClientHarness();
    try {
      const payment = await h.client.createPayment({ amount: '1', currency: 'USD' });
      expect(await h.client.getPaymentStatus(payment.trxId!)).toMatchObject({
        trxId: payment.trxId,
        status: 'PENDING',
        pending: false,
        httpStatus: 200,
        raw: { status: 'success', data: expect.objectContaining({ trxId: payment.trxId }) },
      });
    } finally {
      await h.close();
    }
  });
});
