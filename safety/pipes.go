package safety

import "strings"

// stdinProgram judges what an interpreter reads as its program from
// standard input: a pipe, a here-document or a file.
func (c *call) stdinProgram(prog string) {
	if c.stdinText != nil {
		c.judgeProgram(prog, *c.stdinText, "here-document")
		return
	}
	if s := c.stdinSubst; s != nil {
		switch {
		case s.fetch:
			c.deny("download_exec", "feeds a download into "+prog)
		case s.decode:
			c.deny("obfuscation", "feeds decoded data into "+prog)
		default:
			c.deny("obfuscation", "feeds command output of unknown content into "+prog)
		}
		return
	}
	if c.stdinFile != "" {
		if isNetDevice(c.stdinFile) {
			c.deny("reverse_shell", "runs a program read from a network socket")
		}
		if t, ok := c.sc.taintOf(c.stdinFile); ok {
			c.deny(t, "runs a file produced by a download or decoder: "+c.stdinFile)
		}
		return
	}
	if len(c.in) == 0 {
		return
	}
	allLiteral := true
	var text strings.Builder
	for _, p := range c.in {
		switch {
		case p.fetch:
			c.deny("download_exec", "pipes a download into "+prog)
			return
		case p.netClient:
			c.deny("reverse_shell", "pipes a network connection into "+prog)
			return
		case p.decode:
			c.deny("obfuscation", "pipes decoded data into "+prog)
			return
		}
		if !p.literal {
			allLiteral = false
		}
		text.WriteString(p.text)
	}
	if !allLiteral {
		c.deny("obfuscation", "pipes data of unknown content into "+prog)
		return
	}
	c.judgeProgram(prog, arg{val: text.String()}, "piped program")
}

// judgeProgram judges program text for the interpreter prog.
func (c *call) judgeProgram(prog string, a arg, what string) {
	if isShellName(prog) {
		c.j.nested(c.owner, a, c.sc, what)
		return
	}
	c.judgeCode(prog, a)
}

// pipelineRules looks at a whole pipeline for data flowing from sensitive
// sources to the network and for shells wired to sockets.
func (j *judge) pipelineRules(stages [][]*callInfo) {
	var netOwner, shellOwner = -1, -1
	for i, st := range stages {
		for _, ci := range st {
			if ci.netClient {
				netOwner = ci.owner
			}
			if ci.shell {
				shellOwner = ci.owner
			}
			if !ci.sink && !ci.rawSink {
				continue
			}
			for _, prev := range stages[:i] {
				for _, p := range prev {
					if p.sensitive || (ci.rawSink && !p.literal) {
						j.add(ci.owner, Deny, "exfiltration", "sends "+describe(p)+" to the network")
					}
				}
			}
		}
	}
	if netOwner >= 0 && shellOwner >= 0 {
		j.add(shellOwner, Deny, "reverse_shell", "wires a shell to a network connection")
	}
}

func describe(p *callInfo) string {
	if p.name == "" {
		return "data"
	}
	return "the output of " + p.name
}
