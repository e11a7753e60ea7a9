import type Database from 'better-sqlite3';

/** Prepares a statement once per SQL text: the reads build a few distinct texts, used again and again. */
export type PrepareStatement = (sql: string) => Database.Statement;

export function preparedStatements(db: Database.Database): PrepareStatement {
  const statements = new Map<string, Database.Statement>();
  return (sql) => {
    let statement = statements.get(sql);
    if (statement === undefined) {
      statement = db.prepare(sql);
      statements.set(sql, statement);
    }
    return statement;
  };
}
