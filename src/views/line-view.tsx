/**
 * Drawing lines: each line is ONE `<Text>` (styled runs nested inside it), memoised on its content
 * so a tick re-renders only the rows whose text changed. Under NO_COLOR no style is emitted at all.
 */
import { Box, Text } from 'ink';
import { memo } from 'react';
import { lineSignature, type Line } from './line.js';
import type { ScreenLine } from './screen.js';

interface LineViewProps {
  line: Line;
  noColor: boolean;
}

const styled = (s: Line[number]) => !!(s.color || s.bold || s.dim || s.inverse);

/** One screen line. */
export const LineView = memo(
  function LineView({ line, noColor }: LineViewProps) {
    const text = line.map((s) => s.text).join('');
    if (text.length === 0) return <Text> </Text>;
    if (noColor || !line.some(styled)) return <Text wrap="truncate-end">{text}</Text>;
    return (
      <Text wrap="truncate-end">
        {line.map((s, i) =>
          styled(s) ? (
            <Text key={i} color={s.color} bold={s.bold} dimColor={s.dim} inverse={s.inverse}>
              {s.text}
            </Text>
          ) : (
            s.text
          ),
        )}
      </Text>
    );
  },
  (a, b) => a.noColor === b.noColor && (a.line === b.line || lineSignature(a.line) === lineSignature(b.line)),
);

/** A whole frame: lines in a column, keyed (session rows by session id). */
export function ScreenView({ lines, noColor }: { lines: readonly ScreenLine[]; noColor: boolean }) {
  return (
    <Box flexDirection="column">
      {lines.map((l) => (
        <LineView key={l.key} line={l.line} noColor={noColor} />
      ))}
    </Box>
  );
}
