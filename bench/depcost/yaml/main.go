//go:build bench

// Command yaml is the baseline plus gopkg.in/yaml.v3 as config uses it:
// documents decoded into yaml.Node trees (line numbers kept), walked by
// kind and tag, edited, and written back with an Encoder and Marshal.
package main

import (
	"bytes"
	"fmt"
	"os"

	"gopkg.in/yaml.v3"

	"github.com/nanobot-go/nanobot/bench/depcost/internal/base"
)

func main() {
	_, log, stop := base.Run()
	defer stop()
	data, _ := os.ReadFile(os.Getenv("CONFIG"))
	var doc yaml.Node
	if err := yaml.NewDecoder(bytes.NewReader(data)).Decode(&doc); err != nil {
		log.Error("decode", "err", err)
		return
	}
	walk(&doc, "")
	v, _ := yaml.Marshal(map[string]any{"key": "value", "list": []int{1, 2}})
	var scalar yaml.Node
	if err := yaml.Unmarshal(v, &scalar); err == nil && len(scalar.Content) == 1 && scalar.Content[0].Kind == yaml.MappingNode {
		doc.Content = append(doc.Content, scalar.Content[0])
	}
	var out bytes.Buffer
	enc := yaml.NewEncoder(&out)
	enc.SetIndent(2)
	_ = enc.Encode(&doc)
	_ = enc.Close()
	os.Stdout.Write(out.Bytes())
}

func walk(n *yaml.Node, key string) {
	switch n.Kind {
	case yaml.DocumentNode, yaml.SequenceNode:
		for _, c := range n.Content {
			walk(c, key)
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			walk(n.Content[i+1], key+"."+n.Content[i].Value)
		}
	case yaml.AliasNode:
		walk(n.Alias, key)
	case yaml.ScalarNode:
		if n.ShortTag() == "!!str" && n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle) == 0 {
			n.Style = yaml.DoubleQuotedStyle
		}
		fmt.Printf("%d:%d %s = %s\n", n.Line, n.Column, key, n.Value)
	}
}
