package main

import (
	"context"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/nanobot-go/nanobot/agent/prompt"
	"github.com/nanobot-go/nanobot/config"
	"github.com/nanobot-go/nanobot/daemon"
)

// skills is `nanobot skills list`: every skill with its state and, for
// one that cannot be used, why.
func (a *app) skills(_ context.Context, cfgPath string, args []string) error {
	if len(args) == 0 || args[0] != "list" {
		return usageError{"usage: nanobot skills list"}
	}
	if err := parseFlags(newFlags("skills list", a.stderr), args[1:]); err != nil {
		return err
	}
	cfg, err := a.loadConfig(cfgPath)
	if err != nil {
		return err
	}
	all := daemon.NewPromptSource(cfg).Skills()
	if len(all) == 0 {
		fmt.Fprintf(a.stdout, "%s Add one as %s/skills/<name>/SKILL.md.\n", emptyList("skills", ""), cfg.Agent.Workspace)
		return nil
	}
	w := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "NAME\tSTATE\tSOURCE\tDETAILS")
	for _, sk := range all {
		source := sk.Path
		if sk.Builtin {
			source = "built-in"
		}
		var details string
		switch sk.State() {
		case prompt.StateInvalid:
			details = sk.Problem.Error()
		case prompt.StateUnavailable:
			details = "missing " + strings.Join(sk.Missing, ", ")
		case prompt.StateOverridden:
			details = "replaced by skills/" + sk.Name + " of the workspace"
		default:
			details = oneLine(sk.Description, 80)
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", sk.Name, sk.State(), source, details)
	}
	return w.Flush()
}

// skillsSummary is the skills line of `nanobot status`.
func skillsSummary(cfg *config.Config) string {
	counts := map[string]int{}
	for _, sk := range daemon.NewPromptSource(cfg).Skills() {
		counts[sk.State()]++
	}
	usable := counts[prompt.StateAvailable] + counts[prompt.StateAlways]
	s := fmt.Sprintf("%d in the prompt", usable)
	if n := counts[prompt.StateUnavailable] + counts[prompt.StateInvalid]; n > 0 {
		s += fmt.Sprintf(", %d left out (see nanobot skills list)", n)
	}
	return s
}
