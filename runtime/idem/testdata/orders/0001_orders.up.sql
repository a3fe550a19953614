CREATE TABLE orders (
    id   bigserial PRIMARY KEY,
    item text      NOT NULL,
    qty  integer   NOT NULL CHECK (qty > 0)
);
