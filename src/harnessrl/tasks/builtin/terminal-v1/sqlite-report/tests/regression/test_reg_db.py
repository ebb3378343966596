import sqlite3


def test_db_intact():
    db = sqlite3.connect("/app/shop.db")
    assert db.execute("select count(*) from orders").fetchone()[0] == 8
    assert db.execute("select sum(total) from orders").fetchone()[0] == 236.5
    assert db.execute("select count(*) from customers").fetchone()[0] == 5
