// The official JavaScript SDK's card verifier (verifyAgentCardSignature) on a card fetched from
// argv[2]; each signature's key looked up by kid in the key set its jku names. Prints "valid" or
// "invalid <why>". jose is the SDK's own JOSE library (its dependency, pinned by package-lock).
import { verifyAgentCardSignature } from "@a2a-js/sdk";
import * as jose from "jose";

const card = await (await fetch(process.argv[2])).json();
const verify = verifyAgentCardSignature(async (kid, jku) => {
  const jwks = await (await fetch(jku)).json();
  const jwk = jwks.keys.find((k) => k.kid === kid);
  return await jose.importJWK(jwk, jwk.alg);
});
try {
  await verify(card);
  console.log("valid");
} catch (e) {
  console.log("invalid " + e.message);
}
