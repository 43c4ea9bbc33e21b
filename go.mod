module github.com/nanobot-go/nanobot

go 1.26.8

require (
	github.com/go-telegram/bot v1.19.0 // indirect
	github.com/google/go-cmp v0.7.0 // indirect
	github.com/mattn/go-sqlite3 v1.14.53 // indirect
	github.com/prometheus/client_golang v1.25.0 // indirect
	github.com/sashabaranov/go-openai v1.43.0 // indirect
	gopkg.in/yaml.v3 v3.0.1 // indirect
	mvdan.cc/sh/v3 v3.14.1 // indirect
)
