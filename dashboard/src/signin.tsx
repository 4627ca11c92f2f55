/** The sign-in form: email and password for a login token, kept in this tab's session storage. */
import { useState } from 'preact/hooks';
import { api, failure, session } from './api.js';

export function SignIn({ onSignedIn }: { onSignedIn: () => void }) {
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    const { data, error: err } = await api
      .POST('/api/auth/login', { body: { email, password, session: 'dashboard' } })
      .catch(() => ({ data: undefined, error: { message: 'The service could not be reached.' } }));
    setBusy(false);
    if (!data) return setError(failure(err, 'Signing in failed.'));
    session.set(data.data.token);
    onSignedIn();
  };
  return (
    <main class="signin">
      <form class="card" onSubmit={(e) => void submit(e)} aria-labelledby="signin-title">
        <h1 id="signin-title">Wallet service</h1>
        <p class="muted">Sign in to see your wallets.</p>
        <label for="email">Email</label>
        <input
          id="email"
          name="email"
          type="email"
          autocomplete="username"
          required
          value={email}
          onInput={(e) => setEmail((e.target as HTMLInputElement).value)}
        />
        <label for="password">Password</label>
        <input
          id="password"
          name="password"
          type="password"
          autocomplete="current-password"
          required
          value={password}
          onInput={(e) => setPassword((e.target as HTMLInputElement).value)}
        />
        {error && (
          <p class="error" role="alert">
            {error}
          </p>
        )}
        <button type="submit" class="primary" disabled={busy}>
          {busy ? 'Signing in…' : 'Sign in'}
        </button>
      </form>
    </main>
  );
}
