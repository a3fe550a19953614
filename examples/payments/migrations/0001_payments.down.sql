DROP TABLE refunds;
DROP TABLE payments;
