// The one error factory and the one error shape. Every failed request, whatever raised it (a
// handler, the store, the router, Node's HTTP parser), is answered with `errorBody`.
import { ErrorBody, ID_PREFIX } from "../contract/common";

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    msg: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(msg);
  }
}

export function apiError(status: number, code: string, msg: string, headers?: Record<string, string>): ApiError {
  return new ApiError(status, code, msg, headers);
}

export function errorBody(err: ApiError, operationId: string): ErrorBody {
  return { error_code: err.code, status_code: err.status, msg: err.message, details: { operation_id: operationId } };
}

// Values from the request are echoed in messages and logs only when they have the shape of an id
// (or, for field and query parameter names, of a plain identifier of at most 40 characters), so that a token pasted
// into the wrong place is never written back or logged, and what is echoed stays short.
const ID_SHAPE = new RegExp(`^(${Object.values(ID_PREFIX).join("|")})_[A-Za-z0-9]{1,64}$`);
const NAME_SHAPE = /^[A-Za-z0-9_]{1,40}$/; // a plain identifier: nothing a pasted token could hide in for long

export const isIdShaped = (value: string): boolean => ID_SHAPE.test(value);

export function shown(id: string): string {
  return isIdShaped(id) ? id : "(a value that is not an id)";
}

export function shownName(name: string): string {
  // (A long mix of cases may be a token's secret part pasted in the wrong place.)
  const random = name.length >= 20 && /[a-z]/.test(name) && /[A-Z]/.test(name);
  return NAME_SHAPE.test(name) && !random ? name : "(a name that is not shown)";
}

export function notFound(what: string, id: string): ApiError {
  return apiError(404, "ERR_NOT_FOUND", `${what} not found: ${shown(id)}`);
}
