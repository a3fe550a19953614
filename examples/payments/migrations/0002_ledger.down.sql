DROP TABLE ledger_balances;
DROP TABLE ledger_entries;
