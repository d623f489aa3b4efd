package main

import "strings"

// domain is the project a synthetic session works on: the nouns its
// messages, file names and identifiers are made of.
type domain struct {
	name   string // module basename: "ledger"
	noun   string // a noun used as adjunct: "ledger totals", "the ledger API"
	item   string // what the project handles: "entry"
	items  string // its plural: "entries"
	pkg    string // the main package directory: "internal/ledger"
	config string // the configuration file
	files  []string
	// idents are exported and unexported names the code of the project
	// holds besides those the planted facts name.
	idents []string
}

// domains are the projects of the sessions, taken in turn.
var domains = []domain{
	{
		name: "ledger", noun: "ledger", item: "entry", items: "entries", pkg: "internal/ledger", config: "config/ledgerd.yaml",
		files:  []string{"internal/ledger/parse.go", "internal/ledger/round.go", "internal/ledger/post.go", "internal/ledger/export.go", "internal/store/sqlite.go", "internal/store/migrate.go", "internal/api/handler.go", "cmd/ledgerd/main.go"},
		idents: []string{"PostEntry", "Balance", "openJournal", "sumAccounts", "Journal", "Account", "closePeriod", "trialBalance"},
	},
	{
		name: "billing", noun: "billing", item: "invoice", items: "invoices", pkg: "internal/billing", config: "deploy/billing.yaml",
		files:  []string{"internal/billing/invoice.go", "internal/billing/tax.go", "internal/billing/discount.go", "internal/billing/pdf.go", "internal/db/postgres.go", "internal/db/queries.go", "internal/http/routes.go", "cmd/billingd/main.go"},
		idents: []string{"IssueInvoice", "applyTax", "Customer", "LineItem", "dueDate", "renderPDF", "creditNote", "Currency"},
	},
	{
		name: "inventory", noun: "inventory", item: "sku", items: "skus", pkg: "pkg/inventory", config: "etc/inventory.yaml",
		files:  []string{"pkg/inventory/stock.go", "pkg/inventory/reserve.go", "pkg/inventory/sync.go", "pkg/warehouse/bins.go", "pkg/warehouse/pick.go", "pkg/storage/redis.go", "pkg/api/server.go", "cmd/inventoryd/main.go"},
		idents: []string{"Reserve", "Release", "Warehouse", "Bin", "pickList", "restock", "StockLevel", "lowWater"},
	},
	{
		name: "scheduler", noun: "scheduler", item: "job", items: "jobs", pkg: "internal/scheduler", config: "config/scheduler.toml",
		files:  []string{"internal/scheduler/queue.go", "internal/scheduler/cron.go", "internal/scheduler/lease.go", "internal/scheduler/worker.go", "internal/persist/bolt.go", "internal/persist/codec.go", "internal/rpc/service.go", "cmd/schedd/main.go"},
		idents: []string{"Enqueue", "nextRun", "Lease", "heartbeat", "Worker", "CronSpec", "backlog", "deadLetter"},
	},
	{
		name: "catalog", noun: "catalog", item: "product", items: "products", pkg: "internal/catalog", config: "config/catalog.yaml",
		files:  []string{"internal/catalog/product.go", "internal/catalog/price.go", "internal/catalog/search.go", "internal/catalog/images.go", "internal/index/bleve.go", "internal/index/tokens.go", "internal/web/api.go", "cmd/catalogd/main.go"},
		idents: []string{"Product", "Variant", "PriceList", "indexProduct", "thumbnail", "Category", "slugify", "Availability"},
	},
	{
		name: "payroll", noun: "payroll", item: "payslip", items: "payslips", pkg: "internal/payroll", config: "config/payroll.yaml",
		files:  []string{"internal/payroll/payslip.go", "internal/payroll/gross.go", "internal/payroll/deductions.go", "internal/payroll/bank.go", "internal/store/mysql.go", "internal/store/audit.go", "internal/api/employees.go", "cmd/payrolld/main.go"},
		idents: []string{"Employee", "GrossPay", "withholding", "BankTransfer", "Period", "auditLog", "pension", "NetPay"},
	},
	{
		name: "telemetry", noun: "telemetry", item: "sample", items: "samples", pkg: "internal/telemetry", config: "config/collector.yaml",
		files:  []string{"internal/telemetry/ingest.go", "internal/telemetry/rollup.go", "internal/telemetry/retention.go", "internal/telemetry/labels.go", "internal/tsdb/chunks.go", "internal/tsdb/compress.go", "internal/server/grpc.go", "cmd/collector/main.go"},
		idents: []string{"Ingest", "Rollup", "Series", "labelSet", "Chunk", "gorilla", "retentionPolicy", "Downsample"},
	},
}

// Title returns s with its first letter upper case.
func title(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// base returns the last element of a slash-separated path.
func base(path string) string {
	return path[strings.LastIndexByte(path, '/')+1:]
}

// dir returns path without its last element.
func dir(path string) string {
	if i := strings.LastIndexByte(path, '/'); i >= 0 {
		return path[:i]
	}
	return "."
}
