DROP TABLE bookings;
