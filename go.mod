module github.com/nanobot-go/nanobot

go 1.26.8

require (
	github.com/VictoriaMetrics/metrics v1.45.0
	github.com/go-telegram/bot v1.19.0
	github.com/google/go-cmp v0.7.0
	github.com/mattn/go-sqlite3 v1.14.53
	github.com/sashabaranov/go-openai v1.43.0
	gopkg.in/yaml.v3 v3.0.1
	mvdan.cc/sh/v3 v3.14.1
)

require (
	github.com/valyala/fastrand v1.1.0 // indirect
	github.com/valyala/histogram v1.2.0 // indirect
	golang.org/x/sys v0.48.0 // indirect
)
