import type { Command } from 'commander';

export function registerDoctor(program: Command): void {
  program.command('doctor').description('check the engines: binary, version, status and pairs offered')
    .option('--json', 'print JSON')
    .addHelpText('after', '\nExit status 1 when an engine is unavailable (its conversions are then not offered).')
    .action(async (o: { json?: boolean }) => {
      const { doctor, formatDoctor } = await import('../doctor.ts');
      const report = await doctor();
      process.stdout.write(o.json ? `${JSON.stringify(report, null, 2)}\n` : `${formatDoctor(report)}\n`);
      if (report.engines.some((engine) => !engine.available)) process.exitCode = 1;
    });
}
