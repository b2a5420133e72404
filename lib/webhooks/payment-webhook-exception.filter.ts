import { type ArgumentsHost, Catch, type ExceptionFilter, HttpException, Logger } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { PaymentWebhookHttpException } from './payment-webhook-http.exception.js';
import { PaymentWebhookError, PaymentWebhookErrorCode, type PaymentWebhookErrorBody, webhookErrorCodeForStatus } from './payment-webhook.errors.js';
import { PaymentLogger } from '../common/payment-logger.util.js';

/**
 * Turns anything thrown on the webhook route into `{ statusCode, code, message }` with a
 * stable code. Unknown errors become a 500 whose message says nothing about the cause
 * (it may hold payload values); the cause is logged.
 */
function toWebhookErrorBody(exception: unknown, logger?: Logger): PaymentWebhookErrorBody {
  if (exception instanceof PaymentWebhookHttpException) {
    return exception.getResponse();
  }
  if (exception instanceof PaymentWebhookError) {
    return exception.toResponseBody();
  }
  if (exception instanceof HttpException) {
    const statusCode = exception.getStatus();
    const response = exception.getResponse();
    const code =
      typeof response === 'object' && response !== null && typeof (response as { code?: unknown }).code === 'string'
        ? (response as { code: string }).code
        : statusCode === 400 && exception.cause instanceof SyntaxError
          ? PaymentWebhookErrorCode.INVALID_JSON
          : webhookErrorCodeForStatus(statusCode);
    const message = statusCode >= 500 ? 'Internal server error' : exception.message;
    if (statusCode >= 500) logger?.error(`Webhook request failed: ${exception.message}`, exception.stack);
    return { statusCode, code, message };
  }
  logger?.error(
    `Webhook request failed: ${exception instanceof Error ? `${exception.name}: ${exception.message}` : String(exception)}`,
    exception instanceof Error ? exception.stack : undefined,
  );
  return { statusCode: 500, code: PaymentWebhookErrorCode.INTERNAL_ERROR, message: 'Internal server error' };
}

/**
 * An opt-in filter for the webhook route (`webhookDecorators: [UseFilters(PaymentWebhookExceptionFilter)]`):
 * the route then answers its rejections and failures itself, whatever the host's filters;
 * works on Express and Fastify. The route has no filter by default. @publicApi
 */
@Catch()
export class PaymentWebhookExceptionFilter implements ExceptionFilter {
  protected readonly logger: Logger = new PaymentLogger('PaymentWebhooks');

  constructor(private readonly adapterHost: HttpAdapterHost) {}

  catch(exception: unknown, host: ArgumentsHost): void {
    const response = host.switchToHttp().getResponse();
    // a 2xx or 3xx thrown by an enhancer or handler is an answer, not an error: out as it was made
    if (exception instanceof HttpException && exception.getStatus() < 400) {
      this.adapterHost.httpAdapter.reply(response, exception.getResponse(), exception.getStatus());
      return;
    }
    const body = toWebhookErrorBody(exception, this.logger);
    this.adapterHost.httpAdapter.reply(response, body, body.statusCode);
  }
}
