import { requireUser } from '../../http/auth.js';
import { ok, responses } from '../../http/envelope.js';
import type { App } from '../../http/types.js';
import { SupervisorSchema } from './supervisor.schemas.js';
import type { SupervisorService } from './supervisor.service.js';

export async function supervisorRoutes(app: App, supervisor: SupervisorService): Promise<void> {
  app.get(
    '/supervisor',
    {
      schema: {
        tags: ['system'],
        summary: 'Health of the service and its dependencies',
        description:
          "Status of the database, of each network's node (head and synced block, lag) and of the webhook queue and workers; the queue and transaction counts are the caller's own (deployment-wide figures are on /metrics). `degraded` (still HTTP 200) while a dependency is down.",
        response: responses(SupervisorSchema),
      },
    },
    async (req) => {
      const report = await supervisor.report(requireUser(req).id);
      return ok(report, report.status === 'ok' ? 'All systems operational' : 'Degraded: a dependency is unavailable');
    },
  );
}
