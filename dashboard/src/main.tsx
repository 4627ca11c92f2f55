/**
 * The dashboard (docs/architecture.md, "The dashboard: its stack, and why"): Preact views over the
 * public API, routed by the URL's hash (#/ the wallets, #/wallet/{id} one wallet), one script and
 * one stylesheet from the service's own origin.
 */
import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import './styles.css';
import { session, signOut } from './api.js';
import { SignIn } from './signin.js';
import { Wallet, Wallets } from './wallets.js';
import { ChargeOf } from './charges.js';
import { PayoutOf } from './payout.js';
import { Keys } from './keys.js';
import { Events } from './events.js';

type Route =
  | { view: 'wallets' }
  | { view: 'keys' }
  | { view: 'events' }
  | { view: 'wallet'; id: string }
  | { view: 'charge'; id: string; charge: string }
  | { view: 'payout'; id: string; payout: string };

function parseRoute(hash: string): Route {
  if (hash === '#/keys') return { view: 'keys' };
  if (hash === '#/events') return { view: 'events' };
  const c = /^#\/wallet\/([1-9][0-9]*)\/charge\/([1-9][0-9]*)$/.exec(hash);
  if (c) return { view: 'charge', id: c[1], charge: c[2] };
  const p = /^#\/wallet\/([1-9][0-9]*)\/payout\/([1-9][0-9]*)$/.exec(hash);
  if (p) return { view: 'payout', id: p[1], payout: p[2] };
  const m = /^#\/wallet\/([1-9][0-9]*)$/.exec(hash);
  return m ? { view: 'wallet', id: m[1] } : { view: 'wallets' };
}

function useRoute(): Route {
  const [route, setRoute] = useState(parseRoute(window.location.hash));
  useEffect(() => {
    const on = () => setRoute(parseRoute(window.location.hash));
    window.addEventListener('hashchange', on);
    return () => window.removeEventListener('hashchange', on);
  }, []);
  return route;
}

function View({ route }: { route: Route }) {
  if (route.view === 'keys') return <Keys />;
  if (route.view === 'events') return <Events />;
  if (route.view === 'wallet') return <Wallet id={route.id} />;
  if (route.view === 'charge') return <ChargeOf wallet={route.id} charge={route.charge} />;
  if (route.view === 'payout') return <PayoutOf wallet={route.id} payout={route.payout} />;
  return <Wallets />;
}

function App() {
  const [signedIn, setSignedIn] = useState(session.token() !== null);
  const route = useRoute();
  useEffect(() => {
    const out = () => setSignedIn(false);
    window.addEventListener('signed-out', out);
    return () => window.removeEventListener('signed-out', out);
  }, []);
  if (!signedIn) return <SignIn onSignedIn={() => setSignedIn(true)} />;
  return (
    <>
      <header class="top">
        <a href="#/" class="brand">
          Wallet service
        </a>
        <nav aria-label="Main">
          <a href="#/">Wallets</a>
          <a href="#/keys">API keys</a>
          <a href="#/events">Events</a>
        </nav>
        <button type="button" onClick={() => void signOut()}>
          Sign out
        </button>
      </header>
      <main class="page">
        <View route={route} />
      </main>
    </>
  );
}

const root = document.getElementById('app')!;
root.textContent = ''; // the server's "Loading the dashboard…"
render(<App />, root);
