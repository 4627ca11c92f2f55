import { Type } from '@sinclair/typebox';
import { TokenWithBalanceSchema } from '../tokens/tokens.schemas.js';

/** `balance` is the native token's; `tokens` every active token (the native one included). */
export const WalletBalanceSchema = Type.Object({
  balance: Type.String(),
  tokens: Type.Array(TokenWithBalanceSchema),
});
