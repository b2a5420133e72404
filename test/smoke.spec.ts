import 'reflect-metadata';
import { Controller, Get, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';

@Controller()
class C { @Get('x') x() { return { ok: true }; } }
@Module({ controllers: [C] })
class M {}

it('boots', async () => {
  const app = await NestFactory.create(M, { logger: false });
  await app.listen(0, '127.0.0.1');
  const url = await app.getUrl();
  const r = await fetch(url.replace('[::1]', '127.0.0.1') + '/x');
  expect(await r.json()).toEqual({ ok: true });
  await app.close();
});
