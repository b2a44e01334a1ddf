// Finds, with the TypeScript compiler's type checker, every place in a program's source that
// gives a plan's task a status: an assignment to a task's `status` (`t.status = …`, `t['status']
// = …`, any assignment operator), an object literal with a `status` that becomes a task (typed as
// one where it stands — `tasks.splice(i, 1, { ...t, status })`, `x as Task` — or shaped like
// one, or spread into one), `Object.assign`, `Object.defineProperty` or `Reflect.set` of a
// `status` on a task, and a task replaced whole (`plan.tasks[i] = …`), which may carry another.
// test/core/state-changes.test.ts runs it over src/ and on snippets of each form.

import { join } from 'node:path';
import ts from 'typescript';

export interface StatusWrite {
  file: string;
  line: number;
  /** Which form: `assignment`, `literal`, `call`, `replacement`. */
  form: 'assignment' | 'literal' | 'call' | 'replacement';
  /** The named function it is in (the outermost: a function declared in a module, or a method), or null at the top. */
  within: string | null;
  text: string;
}

/** The name of the outermost named function around `node`. */
function enclosing(node: ts.Node): string | null {
  let name: string | null = null;
  for (let at: ts.Node | undefined = node.parent; at !== undefined; at = at.parent) {
    if ((ts.isFunctionDeclaration(at) || ts.isMethodDeclaration(at)) && at.name !== undefined && ts.isIdentifier(at.name)) name = at.name.text;
    else if (
      ts.isVariableDeclaration(at) &&
      ts.isIdentifier(at.name) &&
      at.initializer !== undefined &&
      (ts.isArrowFunction(at.initializer) || ts.isFunctionExpression(at.initializer))
    )
      name = at.name.text;
  }
  return name;
}

const ROOT = join(import.meta.dirname, '..', '..');
/** Where the plan's Task is declared. */
export const TASK_MODULE = join(ROOT, 'src/core/plan/plan.ts');

/** The compiler options the project checks with (tsconfig.json), for a program over `files`. */
export function programOf(files: readonly string[], host?: ts.CompilerHost): ts.Program {
  const config = ts.readConfigFile(join(ROOT, 'tsconfig.json'), ts.sys.readFile);
  const parsed = ts.parseJsonConfigFileContent(config.config, ts.sys, ROOT);
  return ts.createProgram({ rootNames: [...files], options: { ...parsed.options, noEmit: true, types: [] }, ...(host ? { host } : {}) });
}

/** The status writes in `files` of `program`, each with its file (as given) and line. */
export function statusWrites(program: ts.Program, files: readonly string[]): StatusWrite[] {
  const checker = program.getTypeChecker();
  const taskFile = program.getSourceFile(TASK_MODULE);
  const taskDeclaration = taskFile?.statements.find((s): s is ts.InterfaceDeclaration => ts.isInterfaceDeclaration(s) && s.name.text === 'Task');
  if (taskDeclaration === undefined) throw new Error(`no Task interface in ${TASK_MODULE}`);
  const taskSymbol = checker.getSymbolAtLocation(taskDeclaration.name)!;

  /** The type is (or, as a union or intersection, has) the plan's Task. */
  const isTask = (type: ts.Type | undefined): boolean => {
    if (type === undefined) return false;
    if (type.isUnionOrIntersection()) return type.types.some(isTask);
    return type.getSymbol() === taskSymbol || type.aliasSymbol === taskSymbol;
  };
  /** A task by its shape: what a Task must have, a subject that is text among it (the type may be any object that has it). */
  const taskShaped = (type: ts.Type): boolean => {
    const subject = type.getProperty('subject');
    if (subject === undefined || type.getProperty('blockedBy') === undefined || type.getProperty('metadata') === undefined) return false;
    return (checker.getTypeOfSymbol(subject).flags & ts.TypeFlags.StringLike) !== 0;
  };
  const isStatusKey = (node: ts.Expression): boolean => {
    const type = checker.getTypeAtLocation(node);
    return type.isStringLiteral() ? type.value === 'status' : (type.flags & ts.TypeFlags.String) !== 0;
  };
  /** Whether `literal` becomes a task: typed as one where it stands, shaped like one, or spread into one that does. */
  const becomesTask = (literal: ts.ObjectLiteralExpression): boolean => {
    if (isTask(checker.getContextualType(literal)) || taskShaped(checker.getTypeAtLocation(literal))) return true;
    const parent = literal.parent;
    return ts.isSpreadAssignment(parent) && ts.isObjectLiteralExpression(parent.parent) && becomesTask(parent.parent);
  };
  const hasStatus = (literal: ts.ObjectLiteralExpression): boolean =>
    literal.properties.some((p) => {
      if (ts.isShorthandPropertyAssignment(p)) return p.name.text === 'status';
      if (!ts.isPropertyAssignment(p)) return false;
      if (ts.isIdentifier(p.name) || ts.isStringLiteral(p.name)) return p.name.text === 'status';
      return ts.isComputedPropertyName(p.name) && isStatusKey(p.name.expression);
    });
  /** A status given to an object passed on: a literal with one, or a value whose type has one. */
  const carriesStatus = (node: ts.Expression): boolean =>
    ts.isObjectLiteralExpression(node) ? hasStatus(node) : checker.getTypeAtLocation(node).getProperty('status') !== undefined;
  const isTaskValue = (node: ts.Expression): boolean => {
    const type = checker.getTypeAtLocation(node);
    return isTask(type) || taskShaped(type);
  };
  const calleeName = (call: ts.CallExpression): string =>
    ts.isPropertyAccessExpression(call.expression) && ts.isIdentifier(call.expression.expression)
      ? `${call.expression.expression.text}.${call.expression.name.text}`
      : '';

  const found: StatusWrite[] = [];
  for (const file of files) {
    const source = program.getSourceFile(file);
    if (source === undefined) throw new Error(`${file} is not in the program`);
    const add = (node: ts.Node, form: StatusWrite['form']) =>
      found.push({
        file,
        line: source.getLineAndCharacterOfPosition(node.getStart(source)).line + 1,
        form,
        within: enclosing(node),
        text: node.getText(source).split('\n')[0]!.slice(0, 120),
      });
    const visit = (node: ts.Node): void => {
      if (ts.isBinaryExpression(node) && node.operatorToken.kind >= ts.SyntaxKind.FirstAssignment && node.operatorToken.kind <= ts.SyntaxKind.LastAssignment) {
        const target = node.left;
        if (ts.isPropertyAccessExpression(target) && target.name.text === 'status' && isTaskValue(target.expression)) add(node, 'assignment');
        else if (ts.isElementAccessExpression(target)) {
          if (isTaskValue(target.expression) && isStatusKey(target.argumentExpression)) add(node, 'assignment');
          // A task put in a list or map of them (`plan.tasks[i] = …`): it may carry any status.
          else if (isTask(checker.getTypeAtLocation(target))) add(node, 'replacement');
        }
      }
      if (ts.isObjectLiteralExpression(node) && hasStatus(node) && becomesTask(node)) add(node, 'literal');
      if (ts.isCallExpression(node)) {
        const [target, key, ...rest] = node.arguments;
        const name = calleeName(node);
        if (
          name === 'Object.assign' &&
          target !== undefined &&
          isTaskValue(target) &&
          [key, ...rest].some((source) => source !== undefined && carriesStatus(source))
        )
          add(node, 'call');
        if (
          (name === 'Object.defineProperty' || name === 'Reflect.set' || name === 'Reflect.defineProperty') &&
          target !== undefined &&
          key !== undefined &&
          isTaskValue(target) &&
          isStatusKey(key)
        )
          add(node, 'call');
      }
      ts.forEachChild(node, visit);
    };
    visit(source);
  }
  return found;
}
