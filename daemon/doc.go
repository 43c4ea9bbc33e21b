// Package daemon is the composition root. New builds, top down and in
// dependency order, what every turn needs: the store, the turn engine and
// its bell, the budget, the approvals broker, the providers, the
// background work (jobs, heartbeat, background tasks, the message tool),
// the tools, the loop and the consolidator. NewGateway adds what serves
// it (the Telegram channel, the backups, the admin endpoint), Run serves
// until its context ends and stops in reverse order, and Close tears the
// daemon down. Nothing is set after New; an edit of config.yaml goes
// through one method that rebuilds what changed.
//
// The package also turns config.yaml's sections into the settings of the
// packages it wires (AgentConfig, JobsConfig, HeartbeatConfig, ...), which
// the commands of cmd/nanobot use to describe the setup.
package daemon
