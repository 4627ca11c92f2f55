import { Type } from '@sinclair/typebox';

export const TokenParams = Type.Object({ wallet: Type.String(), token: Type.String() });

/** The address format (and EIP-55 checksum of mixed case) is checked by the service, with its own message. */
export const AddTokenBody = Type.Object({
  contract: Type.String({ minLength: 1, maxLength: 100 }),
});
