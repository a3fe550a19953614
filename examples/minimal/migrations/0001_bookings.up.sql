CREATE TABLE bookings (
    id         uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    room       text NOT NULL,
    start_at   timestamptz NOT NULL,
    party_size integer NOT NULL
);
